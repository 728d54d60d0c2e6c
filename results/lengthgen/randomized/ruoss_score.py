"""Ruoss et al. 2023's score on a study of docs/configs/study-randomized.json:
for each run, the answer-token accuracy at each input length of 41-100 (the
lengths their released example scores past its training lengths 1-40),
averaged over the lengths, read from the `by_input_length` of the run's line
at 3x (246 tokens, sizes 41-122); then, per task and PE, the mean and standard
deviation over seeds, and each randomized PE against its plain one (Welch's
t-test over the task-and-seed scores, scripts/study-claims' test), and per
task over seeds where each side has two seeds or more.

    python3 ruoss_score.py STUDY_DIR [LO HI]

Standard library only."""
import collections
import importlib.machinery
import importlib.util
import json
import math
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
claims_path = os.path.join(here, "..", "..", "..", "scripts", "study-claims")
loader = importlib.machinery.SourceFileLoader("study_claims", claims_path)
claims = importlib.util.module_from_spec(importlib.util.spec_from_loader("study_claims", loader))
loader.exec_module(claims)

study = sys.argv[1]
lo, hi = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (41, 100)
score = collections.defaultdict(dict)  # (pe, task) -> {seed: score}
fit = collections.defaultdict(dict)  # (pe, task) -> {seed: answer-token accuracy at the training length}
pes, tasks = [], []
with open(os.path.join(study, "results.jsonl")) as f:
    for line in f:
        r = json.loads(line)
        key = (r["pe"], r["task"])
        pes += [r["pe"]] if r["pe"] not in pes else []
        tasks += [r["task"]] if r["task"] not in tasks else []
        if r["eval_len"] == r["n_train"]:
            fit[key][r["seed"]] = r["metrics"]["token_accuracy"]
        elif r["eval_len"] == 3 * r["n_train"]:
            accs = [a for n, _, a, _ in r["by_input_length"] if lo <= n <= hi]
            score[key][r["seed"]] = sum(accs) / len(accs)


def cell(d):
    v = list(d.values())
    if not v:
        return "-"
    if len(v) == 1:
        return "%.3f (1 seed)" % v[0]
    m = sum(v) / len(v)
    return "%.3f ± %.3f" % (m, math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)))


print("Answer-token accuracy averaged over input lengths %d-%d (mean ± sd over seeds); "
      "in brackets, at the training length (sizes 1-40)\n" % (lo, hi))
print("| PE | " + " | ".join(tasks) + " | mean over tasks |")
print("|---|" + "---|" * (len(tasks) + 1))
for pe in pes:
    every = [s for t in tasks for s in score[(pe, t)].values()]
    row = ["%s [%s]" % (cell(score[(pe, t)]), cell(fit[(pe, t)]).split(" ")[0]) for t in tasks]
    print("| %s | %s | %s |" % (pe, " | ".join(row), "%.3f" % (sum(every) / len(every)) if every else "-"))
print()
for pe in pes:
    if "+random" not in pe:
        continue
    base = pe.split("+random")[0]
    x = [s for t in tasks for s in score[(pe, t)].values()]
    y = [s for t in tasks for s in score[(base, t)].values()]
    if any(score[(pe, t)].keys() != score[(base, t)].keys() for t in tasks) or len(x) < 2:
        print("%s against %s: not all runs in" % (pe, base))
        continue
    t, p, mx, my = claims.welch(x, y)
    print("%s against %s: %.3f vs %.3f (%+.3f), Welch t = %.2f, p = %.2g, over %d and %d task-seed scores"
          % (pe, base, mx, my, mx - my, t, p, len(x), len(y)))
    for task in tasks:  # per task, over seeds
        a, b = list(score[(pe, task)].values()), list(score[(base, task)].values())
        if len(a) < 2 or len(b) < 2:
            print("  %s: fewer than 2 seeds a side, no test" % task)
            continue
        t, p, mx, my = claims.welch(a, b)
        print("  %s: %+.3f, Welch t = %.2f, p = %.2g" % (task, mx - my, t, p))
