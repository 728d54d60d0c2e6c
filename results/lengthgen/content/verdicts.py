#!/usr/bin/env python3
"""The content-or-position slice's tables and hypotheses (README.md), from a
study's results.jsonl: per PE, alphabet and seed the token accuracy at each
length and, where the model erred, each class's share of the wrong tokens
against its chance; then HQ1-HQ3 as the README fixes them.

    python3 results/lengthgen/content/verdicts.py RUN/results.jsonl

Standard library only. A class's share counts "both" in each of position
and content; its excess is that share minus the line's errors_chance."""
import json
import math
import statistics
import sys

ALPHABETS = {"seq_reverse_bits": 2, "seq_reverse_a4": 4, "seq_reverse_a8": 8, "seq_reverse_a16": 16,
             "seq_reverse": 48}
FIT = 0.9  # token accuracy at the training length that counts as fitted
RANDOM = "rope+random:max=168"


def welch(a, b):
    """Welch's t-test, two-sided: (t, df, p). p from the t distribution by numeric integration."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    t = (statistics.mean(a) - statistics.mean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return t, df, t_two_sided(t, df)


def t_two_sided(t, df):
    """2 P(T > |t|) for Student's t with df degrees of freedom (Simpson's rule on the density)."""
    x, n = abs(t), 20000
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    f = lambda u: c * (1 + u * u / df) ** (-(df + 1) / 2)
    h = x / n
    area = f(0) + f(x) + sum((4 if i % 2 else 2) * f(i * h) for i in range(1, n))
    return max(0.0, 1 - 2 * area * h / 3)


def read(path):
    runs = {}  # (pe, alphabet, seed) -> {eval_len: line}
    n_train = None
    for line in open(path):
        j = json.loads(line)
        if j["task"] not in ALPHABETS:
            continue
        n_train = j["n_train"]
        runs.setdefault((j["pe"], ALPHABETS[j["task"]], j["seed"]), {})[j["eval_len"]] = j
    return runs, n_train


def shares(line):
    """(wrong, position share, content share, position chance, content chance), or None without errors."""
    e = line.get("errors")
    if not e:
        return None
    wrong, pos, cont, both, _ = e
    return wrong, (pos + both) / wrong, (cont + both) / wrong, line["errors_chance"][0], line["errors_chance"][1]


def main():
    runs, n_train = read(sys.argv[1])
    at = 2 * n_train
    print("| PE | symbols | seed | accuracy at %d | at %d | wrong at %d | position share (chance) | "
          "content share (chance) |" % (n_train, at, at))
    print("|---|---:|---:|---:|---:|---:|---|---|")
    for (pe, k, seed), lines in sorted(runs.items()):
        if n_train not in lines or at not in lines:
            continue
        s = shares(lines[at])
        cells = ("%d | %.3f (%.3f) | %.3f (%.3f)" % (s[0], s[1], s[3], s[2], s[4])) if s else "0 | - | -"
        print("| `%s` | %d | %d | %.3f | %.3f | %s |" % (pe, k, seed, lines[n_train]["metrics"]["token_accuracy"],
                                                       lines[at]["metrics"]["token_accuracy"], cells))

    def fitted(pe, k):
        out = []
        for (p, kk, seed), lines in runs.items():
            if p == pe and kk == k and n_train in lines and at in lines and \
                    lines[n_train]["metrics"]["token_accuracy"] >= FIT:
                out.append((seed, shares(lines[at])))
        return sorted(out)

    print()
    excess = [(k, seed, s[2] - s[4]) for k in (48, 16) for seed, s in fitted(RANDOM, k) if s]
    if excess:
        held = all(x >= 0.3 for _, _, x in excess)
        print("HQ1 (randomized RoPE, content excess >= 0.3 at 48 and 16 symbols, fitted seeds): %s; %s" % (
            "held" if held else "did not hold", ", ".join("%d symbols seed %d %.3f" % e for e in excess)))
    else:
        print("HQ1: untestable, no fitted randomized seed erred at 48 or 16 symbols")
    acc = {k: [lines[at]["metrics"]["token_accuracy"] for (p, kk, _), lines in runs.items()
               if p == RANDOM and kk == k and at in lines] for k in (4, 48)}
    if len(acc[4]) >= 2 and len(acc[48]) >= 2:
        t, df, p = welch(acc[48], acc[4])
        d = statistics.mean(acc[48]) - statistics.mean(acc[4])
        print("HQ2 (randomized RoPE at %d: 48 symbols above 4 by >= 0.2, p < 0.05): %s; difference %.3f, "
              "t %.2f, df %.1f, p %.4f" % (at, "held" if d >= 0.2 and p < 0.05 else "did not hold", d, t, df, p))
    else:
        print("HQ2: not enough seeds yet (%d at 4 symbols, %d at 48)" % (len(acc[4]), len(acc[48])))
    excess = [(k, seed, s[2] - s[4]) for k in ALPHABETS.values() for seed, s in fitted("rope", k) if s]
    if excess:
        held = all(x <= 0.1 for _, _, x in excess)
        print("HQ3 (plain RoPE, content excess <= 0.1 at every alphabet, fitted seeds): %s; %s" % (
            "held" if held else "did not hold", ", ".join("%d symbols seed %d %.3f" % e for e in excess)))
    else:
        print("HQ3: untestable, no fitted plain-RoPE seed erred")


if __name__ == "__main__":
    main()
