#!/bin/sh
# The cost of each PE of the 2022-2025 catalogue against its reference
# (rope for the rotary forms, alibi for the biases) on train-mini, and the
# decoder-only ones (xpos, cope, fox, stickbreaking, pope, path) on
# train-mini-clm against rope and alibi there: every spec once per round, two rounds, so that the load of the
# machine hits all alike.
# Output: one line per run, "SIZE SPEC {json}" (bench/README.md).
cd "$(dirname "$0")/.." || exit 1
BUILD=${POSEMB_BUILD:-build}
for round in 1 2; do
  for spec in rope "rope:scaling=yarn,factor=4,original=64" "rope:scaling=dynamic,factor=2,original=64" \
      "rope:scaling=llama3,factor=4,original=64" \
      "rope:scaling=longrope,factor=4,original=64,factors=bench/longrope_factors_hd64.json" "rope:p=0.5" \
      "rope:layers=0|2" alibi kerple "kerple:kind=power" sandwich fire; do
    echo "train-mini $spec $("$BUILD"/bench_train_mini "$spec" train-mini 2 10 fp32)"
  done
  for spec in rope xpos cope alibi fox stickbreaking pope path; do
    echo "train-mini-clm $spec $("$BUILD"/bench_train_mini "$spec" train-mini-clm 2 10 fp32)"
  done
done
