#!/bin/sh
# The cost of the 2024-2026 PEs against their references, in pairs run back
# to back so that the machine's state hits both alike: lrope (learned
# frequencies) and rope+ssmax against rope on train-mini; on train-mini-clm
# (decoder) rope+ssmax, lrope+ssmax and an iRoPE-like stack (rope on layers
# 0 and 2, Llama 4's temperature on 1 and 3) against rope. THREADS (default
# 2) and ROUNDS (default 3) from the environment.
# Output: one line per run, "SIZE SPEC {json}" (bench/README.md).
cd "$(dirname "$0")/.." || exit 1
BUILD=${POSEMB_BUILD:-build}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
r=0
while [ "$r" -lt "$ROUNDS" ]; do
  r=$((r + 1))
  for spec in rope lrope "lrope:per_head=on" "rope+ssmax"; do
    echo "train-mini $spec $("$BUILD"/bench_train_mini "$spec" train-mini "$THREADS" 10 fp32)"
  done
  for spec in rope "rope+ssmax" "lrope+ssmax" "rope:layers=0|2+temperature:layers=1|3"; do
    echo "train-mini-clm $spec $("$BUILD"/bench_train_mini "$spec" train-mini-clm "$THREADS" 10 fp32)"
  done
done
