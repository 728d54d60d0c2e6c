#!/usr/bin/env python3
"""Slice 25's hypotheses (../README.md, "Slice 25": H25.1-H25.3), judged from the committed lines
beside this script: NAME.results.jsonl for NAME in ape-hf-24k-s1..3 (`ape:scale=1`) and
rpe-24k-s1..3 (`rpe`), one file a pretraining. A pretraining counts when it holds all 24 lines
(GLUE's five tasks and SQuAD-locate at 128, 256 and 512 tokens, 3 fine-tuning seeds each); its score
is the mean of its 3 fine-tunings (the unit of replication is the pretraining); GLUE's score is the
mean of each task's main metric, as the real-data study's. Welch 95% intervals over pretrainings
(scripts/claims' welch_ci). Nothing is judged until 3 pretrainings of each PE are in (the plan);
fewer print interim numbers. Each hypothesis is printed as planned, then as the seed paper's claim
under the verdict table's rule with the confounds the plan named (the held-out losses and word-order
costs they quote are passed as --confound TEXT once measured, or --confound none when neither shows, as
the plan allows; without the flag the verdict is not printed).
    python3 results/position-learning/slice25/verdicts.py [--confound TEXT|none]"""
import collections
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import C, lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PES = {"ape-hf": "ape:scale=1", "rpe": "rpe"}
CELLS = 24
STEPS = 24000
DRAWS = 3
# (claim, sign, the paper's effect in this unit, whether the confound favours the claim's side): the confounds favour
# the RPE, so they confound W2 and W3 and handicap W1's side; W1's size is the seed paper's 0.3-0.5 GLUE points, the
# smaller end the power target (as slice 9); W2 and W3 have no size in this unit.
CLAIMS = {"H25.1": ("W2", +1, None, True), "H25.2": ("W1", +1, 0.003, False), "H25.3": ("W3", +1, None, True)}


def draws():
    """{pe: {pretrain_seed: {(task, eval_len): mean over the fine-tuning seeds}}} of the complete pretrainings."""
    out = {pe: {} for pe in PES}
    for path in sorted(glob.glob(os.path.join(HERE, "*-24k-s*.results.jsonl"))):
        m = re.match(r"(.+)-24k-s(\d+)\.results\.jsonl$", os.path.basename(path))
        if not m or m.group(1) not in PES:
            continue
        got = lines(path)
        wrong = [r for r in got if r["pe"] != PES[m.group(1)] or r["pretrain_steps"] != STEPS]
        if wrong:  # a line of another PE or budget copied under this name: the file is not counted
            print(f"{os.path.basename(path)}: {len(wrong)} line(s) not {PES[m.group(1)]} at {STEPS} steps, not counted")
            continue
        seeds = collections.Counter((r["task"], r["eval_len"]) for r in got)
        if len(got) != CELLS or any(n != 3 for n in seeds.values()):
            print(f"{os.path.basename(path)}: {len(got)} of {CELLS} lines, not counted")
            continue
        out[m.group(1)][int(m.group(2))] = C.cell_means(got)
    return out


def show(name, stats, rule, judged, confound):
    eff, lo, hi, p, mde = stats
    print(f"{name}: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] p = {p:.3g}, detects {mde:.3g}: "
          f"{rule(lo, hi) if judged else 'interim, not judged'}")
    cid, sign, paper, favours = CLAIMS[name.split()[0]]
    if judged and confound:
        named = "" if confound == "none" else confound
        side = {"confound": named} if favours else {"against": named}
        v, why = C.verdict(eff, lo, hi, mde, paper, sign, **side)
        print(f"  {cid} as the seed paper's claim: {v}" + (f" ({why})" if why else ""))


def main(argv):
    confound = argv[2] if len(argv) == 3 and argv[1] == "--confound" else ""
    if len(argv) not in (1, 3) or (len(argv) == 3 and not confound):
        sys.exit(__doc__)
    d = draws()
    for pe, by in d.items():
        print(f"{PES[pe]}: pretrainings {sorted(by)}; " + "; ".join(
            f"s{s} GLUE {C.glue_mean(c):.4f}, F1 128 {C.f1_128(c):.4f}, 256 {c[('SQuAD-locate', 256)]:.4f}, 512 "
            f"{c[('SQuAD-locate', 512)]:.4f}" for s, c in sorted(by.items())))
    n = min(len(by) for by in d.values())
    if n < 2:
        print("not judged: fewer than 2 complete pretrainings of a PE")
        return 0
    judged = n >= DRAWS
    if not judged:
        print(f"interim: {n} of {DRAWS} pretrainings of each PE; nothing is judged until all {DRAWS} are in")

    def score(pe, f):
        return [f(c) for c in d[pe].values()]
    show("H25.1 (rpe - ape:scale=1, SQuAD-locate F1 at 128)", C.welch_ci(score("rpe", C.f1_128), score("ape-hf", C.f1_128)),
         lambda lo, hi: "held" if lo > 0 else "did not hold", judged, confound)
    show("H25.2 (ape:scale=1 - rpe, GLUE mean at 128)", C.welch_ci(score("ape-hf", C.glue_mean), score("rpe", C.glue_mean)),
         lambda lo, hi: "held (the interval includes 0)" if lo <= 0 <= hi else "did not hold", judged, confound)
    show("H25.3 (F1 lost from 128 to 512: ape:scale=1 - rpe)", C.welch_ci(score("ape-hf", C.f1_lost), score("rpe", C.f1_lost)),
         lambda lo, hi: "held" if lo > 0 else ("reversed" if hi < 0 else "did not hold (the interval spans 0)"),
         judged, confound)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
