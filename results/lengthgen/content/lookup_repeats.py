#!/usr/bin/env python3
"""How often seq_lookup's queried key was bound more than once, per alphabet,
at the trained sizes (1-16 pairs at 42 tokens) and at 84 tokens (17-37);
then, at 84 tokens, the content class's mean chance over the queries (the
share of the 9 wrong digits that are values of the key's earlier
bindings, as seq_lookup_error_class counts it; drawn with values, from a
second seed):
rows drawn as the generator draws them (src/study/synthetic_seq.c's lookup:
the size uniform in its range, keys uniform over the alphabet, up to 4
distinct keys asked, uniform among those present), 100,000 a cell, seed 1.

    python3 results/lengthgen/content/lookup_repeats.py

Standard library only."""
import random


def share(alphabet, lo, hi, rows, rng):
    repeated = asked = 0
    for _ in range(rows):
        n = rng.randint(lo, hi)
        keys = [rng.randrange(alphabet) for _ in range(n)]
        distinct = list(dict.fromkeys(keys))
        for k in rng.sample(distinct, min(4, len(distinct))):
            asked += 1
            repeated += keys.count(k) >= 2
    return repeated / asked


def content_chance(alphabet, lo, hi, rows, rng):
    total = asked = 0
    for _ in range(rows):
        n = rng.randint(lo, hi)
        pairs = [(rng.randrange(alphabet), rng.randrange(10)) for _ in range(n)]
        last = dict(pairs)
        distinct = list(dict.fromkeys(k for k, _ in pairs))
        for k in rng.sample(distinct, min(4, len(distinct))):
            g = max(i for i, (kk, _) in enumerate(pairs) if kk == k)
            total += len({v for kk, v in pairs[:g] if kk == k and v != last[k]}) / 9
            asked += 1
    return total / asked


def main():
    rng = random.Random(1)
    print("| symbols | 1-16 pairs (42 tokens) | 17-37 pairs (84 tokens) |\n|---:|---:|---:|")
    for a in (2, 4, 8, 16, 48):
        print("| %d | %.3f | %.3f |" % (a, share(a, 1, 16, 100000, rng), share(a, 17, 37, 100000, rng)))
    rng = random.Random(2)
    print("\n| symbols | content chance at 84 tokens |\n|---:|---:|")
    for a in (2, 4, 8, 16, 48):
        print("| %d | %.3f |" % (a, content_chance(a, 17, 37, 20000, rng)))


if __name__ == "__main__":
    main()
