#!/usr/bin/env python3
"""Judges the redraw's hypotheses (README.md here, fixed before the runs)
against the committed lines.

    python3 results/redraw/judge.py DATA_RUN LENGTH_RUN    # "-" for a study not yet in

DATA_RUN: a `posemb study --data` folder (results.jsonl, pretrain/, analysis/);
LENGTH_RUN: a `posemb study --length` folder (results.jsonl). HR2 needs the
pretraining logs of none ape sin lsin rpe srpe, HR3 the cells with 3 seeds in,
HR1 both studies complete. Prints one line per check; standard library only."""
import collections
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # results/: lab.py
from lab import lines  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
RES = os.path.join(ROOT, "results")


def held_out(run, pe, steps=3000):
    """The held-out MLM loss at the end (step STEPS) of PE's pretraining in RUN, or None: from the study's copy of
    the log (written with its tables) or, before that, the model's own."""
    for path in (os.path.join(run, "pretrain", f"{pe}.train_log.jsonl"),
                 os.path.join(run, "models", pe, "pretrain", "train_log.jsonl")):
        if os.path.exists(path):
            end = [r["loss"] for r in lines(path) if r.get("kind") == "eval" and r.get("step") == steps]
            if end:
                return end[-1]
    return None


def hr2(run):
    loss = {pe: held_out(run, pe) for pe in ("none", "ape", "sin", "lsin", "rpe", "srpe")}
    print("HR2 held-out loss: " + ", ".join(f"{p} {v:.4f}" if v is not None else f"{p} -" for p, v in loss.items()))
    if loss["none"] is None:
        return print("HR2: not judged (none's pretraining not in)")
    ok = True
    for pe in ("ape", "sin", "lsin"):
        if loss[pe] is not None:
            d = loss[pe] - loss["none"]
            ok &= abs(d) < 0.02
            print(f"HR2 {pe} - none: {d:+.4f} ({'within' if abs(d) < 0.02 else 'outside'} 0.02)")
    for pe in ("rpe", "srpe"):
        if loss[pe] is not None:
            d = loss["none"] - loss[pe]
            ok &= d >= 1
            print(f"HR2 none - {pe}: {d:+.4f} ({'at least' if d >= 1 else 'under'} 1)")
    full = all(v is not None for v in loss.values())
    print(f"HR2: {'holds' if ok else 'fails'}{'' if full else ' so far (not every pretraining in)'}")


def at_training_length(rows):
    """{(decoder, pe): {seed: perplexity}} at eval_len == n_train."""
    out = collections.defaultdict(dict)
    for r in rows:
        if r["eval_len"] == r["n_train"]:
            out[(r["task"], r["pe"])][r["seed"]] = r["metrics"]["perplexity"]
    return out


def hr3(run):
    old = at_training_length(lines(os.path.join(RES, "length", "results.jsonl")))
    new = at_training_length(lines(os.path.join(run, "results.jsonl")))
    judged, moved = 0, []
    for cell, seeds in sorted(new.items()):
        if len(seeds) < 3 or cell not in old:
            continue
        judged += 1
        ratio = statistics.mean(seeds.values()) / statistics.mean(old[cell].values())
        print(f"HR3 {cell[0]} {cell[1]}: {ratio:.4f} of the committed mean")
        if abs(ratio - 1) >= 0.05:
            moved.append(cell)
    print(f"HR3: {judged} of {len(old)} cells judged, {len(moved)} moved 5% or more"
          + (f" ({', '.join(' '.join(c) for c in moved)})" if moved else "")
          + ("" if judged < len(old) else ("; holds" if not moved else "; fails")))


def verdicts(root):
    """{(claim, testbed): label} of scripts/claims run in ROOT."""
    subprocess.run([sys.executable, os.path.join(root, "scripts", "claims"), "--out", os.path.join(root, "claims.csv")],
                   capture_output=True, text=True, check=True)
    return read_verdicts(os.path.join(root, "claims.csv"))


def read_verdicts(path):
    with open(path) as f:
        return {(r["claim_id"], r["testbed"]): r["verdict"] for r in csv.DictReader(f)}


def hr1(data_run, length_run):
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("scripts", "results"):
            shutil.copytree(os.path.join(ROOT, d), os.path.join(tmp, d))
        real = os.path.join(tmp, "results", "study-data")
        shutil.copy(os.path.join(data_run, "results.jsonl"), os.path.join(real, "results.jsonl"))
        shutil.rmtree(os.path.join(real, "analysis"))
        shutil.copytree(os.path.join(data_run, "analysis"), os.path.join(real, "analysis"))
        shutil.copy(os.path.join(length_run, "results.jsonl"), os.path.join(tmp, "results", "length", "results.jsonl"))
        before, after = read_verdicts(os.path.join(RES, "claims.csv")), verdicts(tmp)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    for k in changed:
        print(f"HR1 {k[0]} ({k[1]}): {before.get(k, '(no row)')} -> {after.get(k, '(no row)')}")
    print(f"HR1: {len(before)} rows, {len(changed)} labels changed; {'holds' if not changed else 'fails'}")


def complete(run, ref):
    """RUN has as many lines as the committed study REF, leaving out slice 1's SQuAD lines (no longer a default
    task of the real-data study)."""
    want = [r for r in lines(os.path.join(RES, ref, "results.jsonl")) if r["task"] != "SQuAD"]
    return len(lines(os.path.join(run, "results.jsonl"))) == len(want)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data_run, length_run = (None if a == "-" else a for a in sys.argv[1:])
    if data_run:
        hr2(data_run)
    if length_run:
        hr3(length_run)
    if data_run and length_run and complete(data_run, "study-data") and complete(length_run, "length"):
        hr1(data_run, length_run)
    else:
        print("HR1: not judged (both studies must be complete: as many lines as the committed ones, SQuAD's left out)")


if __name__ == "__main__":
    main()
