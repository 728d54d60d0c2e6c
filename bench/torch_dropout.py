#!/usr/bin/env python3
"""bench/dropout.c's PyTorch peer: torch.nn.functional.dropout on [32, 4, 128,
128] fp32 at p = 0.1 into a preallocated tensor's place (out of place, as
posemb's), median of REPEATS after one warm-up. usage: torch_dropout.py [THREADS] [REPEATS]"""
import json
import sys
import time

import torch


def main():
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 21
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x = torch.rand(32, 4, 128, 128)
    times = []
    with torch.no_grad():
        for r in range(repeats + 1):
            t0 = time.perf_counter()
            y = torch.nn.functional.dropout(x, p=0.1, training=True)
            t1 = time.perf_counter()
            if r:
                times.append(1e3 * (t1 - t0))
    times.sort()
    ms = times[len(times) // 2]
    print(json.dumps({"engine": "pytorch", "bench": "dropout", "threads": threads, "elements": x.numel(),
                      "ms": round(ms, 3), "ns_per_element": round(1e6 * ms / x.numel(), 3),
                      "kept": round(float((y != 0).float().mean()), 4), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
