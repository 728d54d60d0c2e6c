#!/usr/bin/env python3
"""The position table's RMS over rows 0-127 (the rows pretraining uses) at every kept checkpoint of
one pretraining, then at its end: "STEP RMS" lines, ascending, "final RMS" last (slice 18's
tables.amplitude reads each model). Needs numpy.
    python3 results/position-learning/slice24/rms_by_step.py PRETRAIN_FOLDER"""
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "slice18"))
from tables import amplitude  # noqa: E402


def main(folder):
    steps = sorted((int(m.group(1)), os.path.join(folder, d))
                   for d in os.listdir(folder) if (m := re.fullmatch(r"checkpoint-(\d+)", d)))
    for step, model in steps + [("final", folder)]:
        print(step, "%.6g" % amplitude(model)[0])
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
