#!/usr/bin/env python3
"""Control 5 of the RULER notebook (README.md, "Control 5"): arm E
(niah_single with its value said twice, as the passkey says its key) and
arm F (the passkey with its key said once) at each length, then HC5 and
the read-out fixed before the runs. Reads the arms' committed lines; an
arm not in yet is said so and nothing is judged."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from lab import lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LEARNS = 0.8  # answered (E) or retrieved (F) whole at 128, fixed before the runs


def arm_lines(name):
    path = os.path.join(HERE, name)
    return {r["eval_len"]: r for r in lines(path)} if os.path.exists(path) else {}


def whole(r, arm):
    return r["ruler"]["niah_single"] if arm == "E" else r["metrics"]["passkey"]


def part(r, arm):
    return r["ruler_part"]["niah_single"] if arm == "E" else r["metrics"]["passkey_digits"]


def main():
    arms = [("E", "niah_single, value said twice", "control-niah-twice.results.jsonl"),
            ("F", "passkey, key said once", "control-passkey-once.results.jsonl")]
    at128 = {}
    print("| arm | prompt | perplexity at 128 | whole at 128 | 256 | 512 | 1024 | answer tokens at 128 |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for arm, what, name in arms:
        by_len = arm_lines(name)
        if 128 not in by_len:
            print(f"| {arm} | {what} | not in yet | | | | | |")
            continue
        r = by_len[128]
        at128[arm] = whole(r, arm)
        cells = [f"{whole(by_len[L], arm):.2f}" if L in by_len else "-" for L in (256, 512, 1024)]
        print(f"| {arm} | {what} | {r['metrics']['perplexity']:.3f} | {at128[arm]:.2f} | " + " | ".join(cells)
              + f" | {part(r, arm):.3f} |")
    if len(at128) < 2:
        print("\nNot judged: %d of 2 arms in." % len(at128))
        return
    e, f = at128["E"] >= LEARNS, at128["F"] >= LEARNS
    print("\nHC5 (E learns and F does not): %s" % ("held" if e and not f else "failed"))
    if e and not f:
        print("Read-out: saying the value twice is what teaches these decoders to copy it.")
    elif not e and f:
        print("Read-out: the repetition is not it (the passkey's constant phrase is the next suspect).")
    else:
        print("Read-out: E %s, F %s; reported as it falls, no mechanism claimed."
              % ("learns" if e else "does not learn", "learns" if f else "does not learn"))


if __name__ == "__main__":
    main()
