#!/bin/sh
# Slice 10's read-out (../README.md, "Slice 10"), as slices 7-8 read theirs:
# the word-order cost at every kept checkpoint by `posemb probe order`
# (ape-rms.order_by_step.jsonl, ascending steps), the final model by
# order_ablation.py and `posemb probe order` (order.txt), the rows' RMS at
# each checkpoint (ape-rms.table_rms.txt: positions 0-127, the rows the
# pretraining reads; held at 0.035355 only after the scaling, so the raw
# table's RMS is what drifts), and the pretraining log.
#     results/position-learning/slice10/readout.sh RUN POSEMB LIBPOSEMB
# RUN: the run's folder (its study/ holds models/ and cache/); POSEMB: the
# program that ran it; LIBPOSEMB: libposemb.so of that program (for
# order_ablation.py, run by $PYTHON or python3, with numpy; $POSEMB_PYTHON
# names that program's python/ folder when its posemb_config differs from
# this tree's: the module refuses a library of another layout). Every file
# is written whole, then renamed.
set -eu
run=$1 posemb=$2 lib=$3
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
model=$(ls -d "$run"/study/models/ape_rms*/pretrain)
cache=$run/study/cache/wikitext-2.safetensors
# ascending steps: by the number after "checkpoint-" (the run's own path may hold hyphens)
cks=$(ls -d "$model"/checkpoint-* | awk -F'checkpoint-' '{ print $NF, $0 }' | sort -n | cut -d' ' -f2-)

"$posemb" probe order $cks --cache "$cache" --json --threads 1 > "$here/ape-rms.order_by_step.jsonl.tmp"
mv "$here/ape-rms.order_by_step.jsonl.tmp" "$here/ape-rms.order_by_step.jsonl"

{
    steps=$(grep -o '"step": [0-9]*' "$model/train_log.jsonl" | tail -1 | cut -d' ' -f2)
    echo "# ape-rms (program $(basename "$posemb"), $steps pretraining steps), $(date -u +%Y-%m-%d), $(uname -m), the study's windows"
    PYTHONPATH="${POSEMB_PYTHON:-$root/python}" POSEMB_LIBRARY="$lib" \
        "${PYTHON:-python3}" "$root/results/study-data/positions/order_ablation.py" "$cache" "$model"
    "$posemb" probe order "$model" --cache "$cache" --json --threads 1
} > "$here/order.txt.tmp"
mv "$here/order.txt.tmp" "$here/order.txt"

python3 - "$model" $cks > "$here/ape-rms.table_rms.txt.tmp" <<'EOF'
import json, math, struct, sys
def table(path):
    """position_embeddings.weight's rows 0-127 from a model folder's model.safetensors."""
    with open(path + "/model.safetensors", "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        key = next(k for k in head if k.endswith("position_embeddings.weight"))
        (a, b), (rows, width) = head[key]["data_offsets"], head[key]["shape"]
        f.seek(8 + n + a)
        v = struct.unpack("<%df" % (128 * width), f.read(128 * width * 4))
    return v
print("# step, RMS of the raw table's rows 0-127 (the model adds each row scaled to RMS 0.035355)")
for p in sys.argv[2:] + [sys.argv[1]]:
    v = table(p)
    step = p.rsplit("checkpoint-", 1)[1] if "checkpoint-" in p else "final"
    print(step, "%.6f" % math.sqrt(sum(x * x for x in v) / len(v)))
EOF
mv "$here/ape-rms.table_rms.txt.tmp" "$here/ape-rms.table_rms.txt"
cp "$model/train_log.jsonl" "$here/ape-rms.train_log.jsonl"
