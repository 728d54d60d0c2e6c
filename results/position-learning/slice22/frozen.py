#!/usr/bin/env python3
"""Whether each of slice 22's runs kept its frozen position table: for every
RUN (ARM-sSEED), WORK/RUN/model.safetensors' table against its start's,
WORK/inits/ARM (ARM without "frozen-"), bit for bit. One line per run:
"RUN: position table bitwise equal to its start inits/NAME: yes" (or "no, N
entries differ"); judge.py stops unless every run it reads says yes. Needs numpy.
    python3 results/position-learning/slice22/frozen.py WORK RUN..."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "slice13"))
from random_tables import tensors  # noqa: E402  (slice 13's reader of a safetensors file's float32 tensors)

TABLE = "bert.embeddings.position_embeddings.weight"


def table(folder):
    """The position table of a model folder, as its raw bits."""
    return tensors(os.path.join(folder, "model.safetensors"), [TABLE])[TABLE].view("<u4")


def main(work, runs):
    for r in runs:
        start = r.rsplit("-s", 1)[0].removeprefix("frozen-")
        differ = int(np.count_nonzero(table(os.path.join(work, r)) != table(os.path.join(work, "inits", start))))
        print(f"{r}: position table bitwise equal to its start inits/{start}: "
              + ("yes" if differ == 0 else f"no, {differ} entries differ"))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
