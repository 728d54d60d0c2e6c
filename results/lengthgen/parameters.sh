#!/bin/sh
# The benchmark decoder's parameter counts (docs/study-lengthgen-results.md,
# "Setup"): a 10-step study of `rope` and of `ape` at the benchmark's shape and
# lengths (results/config.json: 42 tokens, evaluated to 168) keeps each model
# ("analyze": 1), and `posemb inspect` counts its tensors. The counts do not
# depend on the steps.
#   parameters.sh POSEMB WORK   (output: WORK/parameters.txt)
set -eu
[ $# -eq 2 ] || { sed -n '2,7p' "$0" >&2; exit 2; }
posemb=$1 work=$2
mkdir -p "$work"
printf '{"pes": ["rope", "ape"], "tasks": ["seq_reverse"], "seeds": [1], "n_train": 42, "lengths": [1, 2, 4], "steps": 10, "curve_every": 10, "analyze": 1}\n' > "$work/shape.json"
"$posemb" study "$work/shape.json" --out "$work/shape" --jobs 1 --threads 1 > /dev/null
: > "$work/parameters.txt.tmp"
for pe in rope ape; do
    echo "== $pe" >> "$work/parameters.txt.tmp"
    "$posemb" inspect "$work/shape/models/$pe/model.safetensors" | sed -n '/^total/p;/wpe/p' >> "$work/parameters.txt.tmp"
done
mv "$work/parameters.txt.tmp" "$work/parameters.txt"
