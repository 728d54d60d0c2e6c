#!/usr/bin/env python3
"""Slice 18's question (../README.md, "why does an unused scale grow?"): the
learned position scale of each checkpoint named, with AdamW's moments of it
from the checkpoint's optimizer.safetensors: m (exp_avg), sqrt(v)
(exp_avg_sq) and m / sqrt(v), the direction and size of the step AdamW
takes (it steps by -lr m / sqrt(v), bias corrections aside: they change
the ratio by under 0.2% from step 6000 on). The scale's offset in the parameter
block comes from libposemb (posemb_model_find on the checkpoint's model),
as the optimizer's arrays use that block's layout (checked: the loaded
block holds the file's scale at that offset). One line per checkpoint:
"STEP SCALE M SQRT_V RATIO DECAY". Then the verdict of the rule fixed in
the README before this ran, over the checkpoints from step 6000 on.

    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so \\
        python3 results/position-learning/slice18/scale_adam.py CHECKPOINT_DIR [...]"""
import ctypes
import json
import math
import os
import re
import struct
import sys

import posemb
from posemb import _fn, _p  # the module's own library handle and types

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import st_header  # noqa: E402

NAME = "bert.embeddings.position_scale"  # in model.safetensors; libposemb names it without the base prefix
PARAM = "embeddings.position_scale"


class _Param(ctypes.Structure):  # posemb/model.h, posemb_param
    _fields_ = [("name", ctypes.c_char * 128), ("ndim", ctypes.c_int), ("shape", ctypes.c_int64 * 2),
                ("numel", ctypes.c_size_t), ("offset", ctypes.c_size_t), ("decay", ctypes.c_int),
                ("unused", ctypes.c_int), ("head", ctypes.c_int)]


_find = _fn("posemb_model_find", ctypes.POINTER(_Param), _p, ctypes.c_char_p)
_weights = _fn("posemb_model_weights", ctypes.POINTER(ctypes.c_float), _p)


def f32_at(path, name, index):
    """Element index of float32 tensor name in a safetensors file."""
    header, base = st_header(path)
    t = header.get(name)
    if not t or t["dtype"] != "F32":
        sys.exit(f"scale_adam.py: {path}: no float32 tensor {name}")
    a, b = t["data_offsets"]
    if index * 4 + 4 > b - a:
        sys.exit(f"scale_adam.py: {path}: {name} has no element {index}")
    with open(path, "rb") as f:
        f.seek(base + a + 4 * index)
        return struct.unpack("<f", f.read(4))[0]


def read(ckpt):
    model = posemb.Model(ckpt)
    try:
        p = _find(model._m, PARAM.encode())
        if not p:
            sys.exit(f"scale_adam.py: {ckpt}: no parameter {PARAM}")
        off, decay = p.contents.offset, p.contents.decay
        loaded = _weights(model._m)[off]
    finally:
        model.close()
    scale = f32_at(os.path.join(ckpt, "model.safetensors"), NAME, 0)
    if loaded != scale:  # the offset (and this mirror of posemb_param) is checked against the loaded block
        sys.exit(f"scale_adam.py: {ckpt}: the block holds {loaded} at {NAME}'s offset {off}, the file {scale}")
    opt = os.path.join(ckpt, "optimizer.safetensors")
    m, v = f32_at(opt, "exp_avg", off), f32_at(opt, "exp_avg_sq", off)
    return scale, m, math.sqrt(v), m / math.sqrt(v) if v > 0 else float("nan"), decay


def schedule(ckpt, after):
    """(sum of lr, sqrt of the sum of lr^2) over the steps after AFTER, from the checkpoint's trainer_state.json
    (its history: [step, loss, lr, grad_norm] per step)."""
    with open(os.path.join(ckpt, "trainer_state.json")) as f:
        lrs = [h[2] for h in json.load(f)["history"] if h[0] > after]
    return sum(lrs), math.sqrt(sum(x * x for x in lrs))


def main(dirs):
    if not dirs:
        sys.exit(__doc__)
    later, scales = [], {}
    dirs = sorted(dirs, key=lambda d: int(re.search(r"checkpoint-(\d+)", d).group(1)))
    for d in dirs:
        step = int(re.search(r"checkpoint-(\d+)", d).group(1))
        scale, m, sv, ratio, decay = read(d)
        scales[step] = scale
        print(f"{step} {scale:.6g} {m:+.4g} {sv:.4g} {ratio:+.3f} {decay}")
        if step >= 6000:
            later.append((m, ratio))
    n = len(later)
    small = sum(abs(r) < 0.5 for _, r in later)
    pushed_up = sum(m < 0 and abs(r) > 0.5 for m, r in later)
    signs = {m > 0 for m, _ in later if m != 0}
    drift = small >= 15 and len(signs) == 2
    consistent = pushed_up >= 12
    print(f"{n} checkpoints from step 6000: |m|/sqrt(v) below 0.5 at {small}, m of both signs: {len(signs) == 2}, "
          f"m < 0 with |m|/sqrt(v) above 0.5 at {pushed_up}: "
          + ("a drift under AdamW's normalised steps" if drift else "a consistent gradient" if consistent
             else "neither, as the rule defines them"))
    # reported beside the rule, not part of it (added after it ran, at review): the sizes a drift and a push predict
    first, last = scales[6000], scales[max(scales)]
    total, spread = schedule(dirs[-1], 6000)
    print(f"from step 6000: the scale moved {last - first:+.4f}; sum of lr {total:.3f}, sqrt(sum of lr^2) {spread:.4f}: "
          f"noise alone walks it about {spread:.3f} (one sd), and a steady mean ratio of {-(last - first) / total:+.4f} "
          f"would move it as far")


if __name__ == "__main__":
    main(sys.argv[1:])
