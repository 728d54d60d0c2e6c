#!/bin/sh
# Slice 11's read-out (../README.md, "Slice 11"), as slice 10 reads its one
# PE, here for each pre-LN pretraining of the run: the word-order cost at
# every kept checkpoint by `posemb probe order` (PE.order_by_step.jsonl,
# ascending steps), the learned position scale at each and at the end by
# scales.py (PE.scale_by_step.txt: "STEP SCALE", "-" without one), the final models by
# order_ablation.py and `posemb probe order` (order.txt), and each
# pretraining log (PE.train_log.jsonl).
#     results/position-learning/slice11/readout.sh RUN POSEMB LIBPOSEMB [OUT]
# OUT: where the files go (default this script's folder; slice 12 reads its
# run into ../slice12 with this script). RUN: the run's folder (its study/ holds models/ and cache/); POSEMB: the
# program that ran it; LIBPOSEMB: libposemb.so of that program (for
# order_ablation.py, run by $PYTHON or python3, with numpy; $POSEMB_PYTHON
# names that program's python/ folder when its posemb_config differs from
# this tree's). Every file is written whole, then renamed. RUN's path must
# not hold spaces (the folders are listed through the shell's words).
set -eu
run=$1 posemb=$2 lib=$3
root=$(cd "$(dirname "$0")/../../.." && pwd)
here=$(cd "${4:-$(dirname "$0")}" && pwd)
cache=$run/study/cache/wikitext-2.safetensors
models=$(ls -d "$run"/study/models/*/pretrain)

for model in $models; do
    pe=$(basename "$(dirname "$model")")
    # ascending steps: by the number after "checkpoint-" (the run's path may hold hyphens)
    cks=$(ls -d "$model"/checkpoint-* | awk -F'checkpoint-' '{ print $NF, $0 }' | sort -n | cut -d' ' -f2-)
    "$posemb" probe order $cks --cache "$cache" --json --threads 1 > "$here/$pe.order_by_step.jsonl.tmp"
    mv "$here/$pe.order_by_step.jsonl.tmp" "$here/$pe.order_by_step.jsonl"
    "${PYTHON:-python3}" "$root/results/position-learning/scales.py" $cks "$model" > "$here/$pe.scale_by_step.txt.tmp"
    mv "$here/$pe.scale_by_step.txt.tmp" "$here/$pe.scale_by_step.txt"
    cp "$model/train_log.jsonl" "$here/$pe.train_log.jsonl.tmp"
    mv "$here/$pe.train_log.jsonl.tmp" "$here/$pe.train_log.jsonl"
done

{
    echo "# $(basename "$here") (program $(basename "$posemb")), $(date -u +%Y-%m-%d), $(uname -m), the study's windows"
    for model in $models; do
        PYTHONPATH="${POSEMB_PYTHON:-$root/python}" POSEMB_LIBRARY="$lib" \
            "${PYTHON:-python3}" "$root/results/study-data/positions/order_ablation.py" "$cache" "$model"
        "$posemb" probe order "$model" --cache "$cache" --json --threads 1
    done
} > "$here/order.txt.tmp"
mv "$here/order.txt.tmp" "$here/order.txt"
