#!/usr/bin/env python3
"""The RULER slice of the notebook (README.md, "The slice"): RULER's own
niah_single beside the passkey (control 6's mix) for 6 PEs x 2 decoders x 3
seeds, lines in slice-gpt2.results.jsonl and slice-llama.results.jsonl.
Prints, per (PE, decoder), niah_single and the passkey answered whole at
each length (mean over the seeds in), the effective length (threshold 0.8,
fixed before the runs), niah_single by depth, then HR1-HR4 as fixed before
the runs. Until all 36 runs are in, every hypothesis prints "interim, not
judged". Run from anywhere:
    python3 results/length/ruler/slice.py"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import C, lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PES = ["none", "ape", "rope", "alibi", "kerple", "fire"]
DECODERS = ["gpt2", "llama"]
SEEDS = [1, 2, 3]
LENGTHS = [128, 256, 512, 1024]
THRESHOLD = 0.8  # effective length: the longest L with every length up to L at or above it (mean over seeds)
RUNS = len(PES) * len(DECODERS) * len(SEEDS)
TASK = "niah_single"


def models():
    """{(pe, decoder, seed): {eval_len: line}} of the runs with all four lengths in."""
    got = {}
    for d in DECODERS:
        path = os.path.join(HERE, f"slice-{d}.results.jsonl")
        for r in lines(path) if os.path.exists(path) else []:
            got.setdefault((r["pe"], r["task"], r["seed"]), {})[r["eval_len"]] = r
    return {k: v for k, v in got.items() if all(n in v for n in LENGTHS)}


def niah(r):
    return r["ruler"][TASK]


def passkey(r):
    return r["metrics"]["passkey"]


def mean_by_length(m, pe, d, f):
    runs = [m[k] for k in sorted(m) if k[:2] == (pe, d)]
    return {n: statistics.mean(f(x[n]) for x in runs) for n in LENGTHS} if runs else None


def effective(means):
    length = 0
    for n in LENGTHS:
        if means[n] < THRESHOLD - 1e-9:  # a mean of 0.7, 0.8, 0.9 is 0.7999999999999999
            break
        length = n
    return length


def table(m):
    print("| PE | decoder | seeds | niah_single whole at 128 / 256 / 512 / 1024 | passkey | effective length |")
    print("| --- | --- | ---: | --- | --- | ---: |")
    eff = {}
    for pe in PES:
        for d in DECODERS:
            nm, pk = mean_by_length(m, pe, d, niah), mean_by_length(m, pe, d, passkey)
            if nm is None:
                continue
            eff[(pe, d)] = effective(nm)
            seeds = sum(1 for k in m if k[:2] == (pe, d))
            print(f"| `{pe}` | {d} | {seeds} | " + " / ".join(f"{nm[n]:.2f}" for n in LENGTHS) + " | "
                  + " / ".join(f"{pk[n]:.2f}" for n in LENGTHS) + f" | {eff[(pe, d)] or 'below 128'} |")
    return eff


def depths(m):
    print("\nniah_single whole by depth (0, 1/4, 1/2, 3/4, 1), mean over seeds, at each length")
    for pe in PES:
        for d in DECODERS:
            runs = [m[k] for k in sorted(m) if k[:2] == (pe, d)]
            if runs:
                cells = ["[" + " ".join(f"{statistics.mean(x[n]['ruler_depths'][TASK][i] for x in runs):.2f}"
                                        for i in range(5)) + "]" for n in LENGTHS]
                print(f"  {pe:7s} {d:5s} " + "  ".join(f"{n}: {c}" for n, c in zip(LENGTHS, cells)))


def middle_minus_ends(runs):
    """Per model: depths 1/4-3/4 minus depths 0 and 1, mean over the lengths whose whole score is in [0.1, 0.9]."""
    out = []
    for x in runs:
        cells = [x[n]["ruler_depths"][TASK] for n in LENGTHS if 0.1 <= niah(x[n]) <= 0.9]
        if cells:
            out.append(statistics.mean(statistics.mean(c[1:4]) - statistics.mean([c[0], c[4]]) for c in cells))
    return out


def hypotheses(m, eff):
    judged = len(m) == RUNS
    if not judged:
        print(f"\ninterim: {len(m)} of {RUNS} runs in; nothing is judged until all are (the plan)")
    said = (lambda ok: "held" if ok else "did not hold") if judged else (lambda ok: "interim, not judged")
    same = sum(1 for x in m.values() if (niah(x[128]) >= 0.5) == (passkey(x[128]) >= 0.5))
    print(f"\nHR1 (niah_single and the passkey on the same side of 0.5 at 128 in at least 30 of {RUNS} runs): "
          f"{same} of {len(m)}: {said(same >= 30)}")
    want = {("alibi", "llama"), ("kerple", "llama")}
    ok = all(eff.get(k, 0) >= 256 for k in want) and all(v <= 128 for k, v in eff.items() if k not in want)
    print(f"HR2 (Llama alibi and kerple reach at least 256, no other (PE, decoder) passes 128): "
          f"{ {f'{k[0]}/{k[1]}': v for k, v in eff.items()} }: {said(ok)}")
    a = [niah(m[k][256]) for k in sorted(m) if k[:2] == ("kerple", "llama")]
    b = [niah(m[k][256]) for k in sorted(m) if k[:2] == ("rope", "llama")]
    if len(a) >= 2 and len(b) >= 2:
        eff_, lo, hi, p, mde = C.welch_ci(a, b)
        print(f"HR3 (Llama kerple - rope, niah_single whole at 256, Welch): {eff_:+.3f} [{lo:+.3f}, {hi:+.3f}] "
              f"p = {p:.3g}, detects {mde:.3g}: {said(lo > 0)}")
    x = middle_minus_ends(list(m.values()))
    if len(x) >= 2:
        e, lo, hi, p, mde = C.one_sample_ci(x)
        line = (f"HR4 (lost in the middle: depths 1/4-3/4 minus 0 and 1, models with a length in [0.1, 0.9]): "
                f"{e:+.3f} [{lo:+.3f}, {hi:+.3f}] p = {p:.3g}, detects {mde:.3g}, n {len(x)}: {said(hi < 0)}")
        print(line)
        if judged:
            v, why = C.verdict(e, lo, hi, mde, None, -1)
            print(f"  as Liu et al.'s claim: {v}" + (f" ({why})" if why else ""))
    else:
        print(f"HR4 (lost in the middle): {len(x)} model(s) with a length in [0.1, 0.9]: not judged")


def main():
    m = models()
    eff = table(m)
    depths(m)
    hypotheses(m, eff)


if __name__ == "__main__":
    main()
