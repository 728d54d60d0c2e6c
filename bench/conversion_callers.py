#!/usr/bin/env python3
"""Who calls the bf16 conversions: the samples whose innermost frame is
bf16_round_row in `perf script -F tid,ip,sym` output of a run recorded with
call graphs, grouped by the first caller outside the conversion's own
frames (convert, bf16_copy, gemm_bf16, posemb_nn_gemm, GOMP_parallel),
marked when the LM head (posemb_nn_xent_tied) is further out.
Samples on an OpenMP worker's stack have no caller (the worker starts at
start_thread): they are counted apart.

    perf record -F 999 --call-graph dwarf,8192 -o perf.data -- \\
        build/bench_train_mini ape train-llama 2 12 bf16
    perf script -i perf.data -F tid,ip,sym > conv.script
    bench/conversion_callers.py conv.script

Standard library only."""
import collections
import re
import sys

OWN = {"bf16_round_row", "convert._omp_fn.0", "GOMP_parallel", "bf16_copy", "gemm_bf16", "posemb_nn_gemm"}


def frames(sample):
    """The symbols of one sample, innermost first (its first line is the thread)."""
    out = []
    for line in sample.strip().split("\n")[1:]:
        parts = line.split(None, 1)
        sym = re.sub(r"\+0x[0-9a-f]+$", "", parts[1].split(" (")[0]) if len(parts) > 1 else ""
        out.append(sym.replace(".arch_x86_64_v4", ""))
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    callers, total = collections.Counter(), 0
    for sample in open(sys.argv[1]).read().split("\n\n"):
        f = frames(sample)
        if not f:
            continue
        total += 1
        if f[0] != "bf16_round_row":
            continue
        if "GOMP_parallel" not in f and "start_thread" in f:
            callers["(an OpenMP worker: no caller on its stack)"] += 1
            continue
        who = next((s for s in f[1:] if s not in OWN), "(none)")
        callers[who + (" (the LM head, posemb_nn_xent_tied)" if "posemb_nn_xent_tied" in f else "")] += 1
    n = sum(callers.values())
    print(f"{n} of {total} samples in bf16_round_row ({100 * n / max(total, 1):.1f}%)\n")
    print("| first caller | samples | share |\n| --- | ---: | ---: |")
    for who, k in callers.most_common():
        print(f"| {who} | {k} | {100 * k / n:.1f}% |")


if __name__ == "__main__":
    main()
