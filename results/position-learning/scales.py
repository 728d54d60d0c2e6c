#!/usr/bin/env python3
"""The learned position scale of each model folder named, one line each:
"STEP SCALE" (STEP from a checkpoint-N folder's name, else "final"), read
from the folder's model.safetensors tensor ending in "position_scale"
(float32, one element). A folder without one prints "STEP -". Read-outs
of results/position-learning use it beside `posemb probe order`:
    python3 results/position-learning/scales.py MODEL_DIR [MODEL_DIR ...]"""
import json
import os
import re
import struct
import sys


def scale(path):
    """The position_scale of a safetensors file, or None."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        if n > 100_000_000:
            raise ValueError(f"{path}: a header of {n} bytes")
        header = json.loads(f.read(n))
        for name, t in header.items():
            if name.endswith("position_scale"):
                a, b = t["data_offsets"]
                if t["dtype"] != "F32" or b - a != 4:
                    raise ValueError(f"{path}: {name} is not one float32")
                f.seek(8 + n + a)
                return struct.unpack("<f", f.read(4))[0]
    return None


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    for d in argv[1:]:
        m = re.search(r"checkpoint-(\d+)/?$", d)
        s = scale(os.path.join(d, "model.safetensors"))
        print(f"{m.group(1) if m else 'final'} {'-' if s is None else f'{s:.6g}'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
