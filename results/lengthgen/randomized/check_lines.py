"""Whether a study run again gives the committed scores: every line of NEW
(pe, task, seed, eval_len) must have a committed line in COMMITTED with the
same metrics, to every printed digit (the metrics the committed line has: a
later program may add others). Prints one line per run's line and exits 1 on
the first difference (or a line with no committed counterpart).

    python3 check_lines.py NEW COMMITTED"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import lines  # noqa: E402


def key(r):
    return r["pe"], r["task"], r["seed"], r["eval_len"]


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__.strip())
    committed = {key(r): r["metrics"] for r in lines(argv[2])}
    new = lines(argv[1])
    if not new:
        sys.exit(f"check_lines: {argv[1]}: no lines")
    for r in new:
        k = key(r)
        if k not in committed:
            sys.exit(f"check_lines: {argv[1]}: {k} has no line in {argv[2]}")
        same = all(r["metrics"].get(m) == v for m, v in committed[k].items())
        print(f"{' '.join(map(str, k))}: {r['metrics']} {'equal to' if same else 'DIFFERS from'} the committed line")
        if not same:
            sys.exit(f"check_lines: {argv[1]}: {k}: {r['metrics']} against {committed[k]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
