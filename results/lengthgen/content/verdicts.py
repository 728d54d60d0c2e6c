#!/usr/bin/env python3
"""The content-or-position slice's tables and hypotheses (README.md), from a
study's results.jsonl: per PE, alphabet and seed the token accuracy at each
length and, where the model erred, each class's share of the wrong tokens
against its chance; then HQ1-HQ3 as the README fixes them.

    python3 results/lengthgen/content/verdicts.py RUN/results.jsonl
    python3 results/lengthgen/content/verdicts.py --copy RUN/results.jsonl
    python3 results/lengthgen/content/verdicts.py --lookup RUN/results.jsonl

--copy reads the copy arm (copy.json: the seq_copy tasks) and names its
hypotheses HC1-HC3, the same tests as HQ1-HQ3 (README.md, "The copy arm").
--lookup reads the lookup arm (lookup.json) and judges HL1-HL3 (README.md,
"The lookup arm": HL1 at 16 symbols only, HL3 at 16 and 48).

Standard library only. A class's share counts "both" in each of position
and content; its excess is that share minus the line's errors_chance."""
import json
import math
import statistics
import sys

REVERSE = {"seq_reverse_bits": 2, "seq_reverse_a4": 4, "seq_reverse_a8": 8, "seq_reverse_a16": 16,
           "seq_reverse": 48}
COPY = {"seq_copy_bits": 2, "seq_copy_a4": 4, "seq_copy_a8": 8, "seq_copy_a16": 16, "seq_copy": 48}
LOOKUP = {"seq_lookup_a2": 2, "seq_lookup_a4": 4, "seq_lookup_a8": 8, "seq_lookup_a16": 16, "seq_lookup": 48}
# Each arm: its tasks by alphabet, its hypotheses' prefix, and the alphabets H1 and H3 read.
ARMS = {None: (REVERSE, "HQ", (48, 16), (8, 16, 48)), "--copy": (COPY, "HC", (48, 16), (8, 16, 48)),
        "--lookup": (LOOKUP, "HL", (16,), (16, 48))}
ALPHABETS, H, H1_ALPHABETS, H3_ALPHABETS = ARMS[None]
FIT = 0.9  # token accuracy at the training length that counts as fitted
RANDOM = "rope+random:max=168"


def read(path):
    """The slice's lines by (pe, alphabet, seed) and eval_len; refuses duplicates, several n_train or
    steps, and lines with wrong tokens but no error classes (written before the classes existed)."""
    runs, seen = {}, set()
    for line in open(path):
        j = json.loads(line)
        if j["task"] not in ALPHABETS:
            continue
        key = (j["pe"], ALPHABETS[j["task"]], j["seed"])
        if (key, j["eval_len"]) in seen:
            sys.exit("%s: two lines for %s at %d tokens" % (path, key, j["eval_len"]))
        seen.add((key, j["eval_len"]))
        if j["metrics"]["token_accuracy"] < 1 and "errors" not in j:
            sys.exit("%s: %s at %d tokens has wrong tokens but no error classes" % (path, key, j["eval_len"]))
        runs.setdefault(key, {})[j["eval_len"]] = j
    settings = {(j["n_train"], j["steps"]) for lines in runs.values() for j in lines.values()}
    if len(settings) != 1:
        sys.exit("%s: %s" % (path, "no line of the slice" if not settings else "several n_train, steps: %s" % settings))
    return runs, settings.pop()[0]


def shares(line):
    """(wrong, position share, content share, content-alone share, and the three chances), or None."""
    e = line.get("errors")
    if not e:
        return None
    wrong, pos, cont, both, _ = e
    ch = line["errors_chance"]
    return wrong, (pos + both) / wrong, (cont + both) / wrong, cont / wrong, ch[0], ch[1], ch[2]


def main():
    global ALPHABETS, H, H1_ALPHABETS, H3_ALPHABETS
    args = sys.argv[1:]
    if args[:1] and args[0] in ARMS:
        ALPHABETS, H, H1_ALPHABETS, H3_ALPHABETS = ARMS[args[0]]
        args = args[1:]
    if len(args) != 1:
        sys.exit(__doc__)
    runs, n_train = read(args[0])
    at = 2 * n_train
    print("| PE | symbols | seed | accuracy at %d | at %d | wrong at %d | position share (chance) | "
          "content share (chance) | content alone (chance) |" % (n_train, at, at))
    print("|---|---:|---:|---:|---:|---:|---|---|---|")
    for (pe, k, seed), lines in sorted(runs.items()):
        if n_train not in lines or at not in lines:
            continue
        s = shares(lines[at])
        cells = ("%d | %.3f (%.3f) | %.3f (%.3f) | %.3f (%.3f)" % (s[0], s[1], s[4], s[2], s[5], s[3], s[6])) \
            if s else "0 | - | - | -"
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
    for k in H1_ALPHABETS:  # HQ1, per alphabet
        excess = [(seed, sh[2] - sh[5]) for seed, sh in fitted(RANDOM, k) if sh]
        if not excess:
            print(H + "1 at %d symbols: untestable, no fitted randomized seed erred" % k)
            continue
        print(H + "1 at %d symbols (randomized RoPE, content excess >= 0.3 in every fitted seed): %s; %s" % (
            k, "held" if all(x >= 0.3 for _, x in excess) else "did not hold",
            ", ".join("seed %d %.3f" % e for e in excess)))
    means = []
    for k in sorted(set(ALPHABETS.values())):  # HQ2: the order of the fitted means
        acc = [lines[at]["metrics"]["token_accuracy"] for seed, _ in fitted(RANDOM, k)
               for (p, kk, s2), lines in runs.items() if p == RANDOM and kk == k and s2 == seed]
        if acc:
            means.append((k, statistics.mean(acc), len(acc)))
    if len(means) >= 3:
        rising = all(means[i][1] < means[i + 1][1] for i in range(len(means) - 1))
        print(H + "2 (randomized RoPE's fitted mean at %d rises strictly with the alphabet; p = 1/%d! = %.4f): %s; %s" % (
            at, len(means), 1 / math.factorial(len(means)), "held" if rising else "did not hold",
            ", ".join("%d symbols %.3f (%d seeds)" % m for m in means)))
    else:
        print(H + "2: untestable, fitted seeds at %d alphabets" % len(means))
    excess = [(k, seed, sh[3] - sh[6]) for k in H3_ALPHABETS for seed, sh in fitted("rope", k) if sh]
    where = ", ".join(str(k) for k in H3_ALPHABETS)
    if excess:
        held = all(x <= 0.1 for _, _, x in excess)
        print(H + "3 (plain RoPE, content-alone excess <= 0.1 at %s symbols, fitted seeds): %s; %s" % (
            where, "held" if held else "did not hold", ", ".join("%d symbols seed %d %.3f" % e for e in excess)))
    else:
        print(H + "3: untestable, no fitted plain-RoPE seed erred at %s symbols" % where)


if __name__ == "__main__":
    main()
