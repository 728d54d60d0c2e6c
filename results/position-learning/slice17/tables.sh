#!/bin/sh
# Slice 17's table read-out (../README.md, "Slice 17"): `posemb analyze` (no figures, the 128
# positions pretraining used, one thread) on every kept checkpoint of the TUPE pretraining and on
# its final model, and on 20 TUPE models at their initialisation (one step at lr 1e-12 of
# `posemb train`, seeds 1-20, the study's BERT shape and TUPE spec): the positional logits'
# indicators (indicators.json's "bias" block: TI, MONO, SYM) by step in tupe.tables_by_step.csv
# ("step,ti,mono,sym"; the final model as step 3000) and per initial draw in
# tupe.tables_init.csv ("seed,ti,mono,sym"). Each file is written whole, then renamed.
#     results/position-learning/slice17/tables.sh RUN POSEMB DATA
# RUN: the run folder (RUN/study/models/tupe/pretrain); POSEMB: a posemb program; DATA: the data
# folder (wikitext-2 and bert-base-uncased/vocab.txt for the initial models' one step).
set -eu
run=$1 posemb=$2 data=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec="tupe:share=on,cls=off,ln=on,scale_factor=2,init_std=0.226274"
model=$run/study/models/tupe/pretrain
row() { # the "bias" block of an indicators.json as "ti,mono,sym"
    python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["bias"]; print("%.6f,%.6f,%.6f" % (b["ti"], b["mono"], b["sym"]))' "$1"
}
echo "step,ti,mono,sym" > "$tmp/by_step.csv"
for ck in $(ls -d "$model"/checkpoint-* | awk -F'checkpoint-' '{ print $NF, $0 }' | sort -n | cut -d' ' -f2-); do
    "$posemb" analyze "$ck" --len 128 --no-figures --threads 1 --out "$tmp/a" > /dev/null
    echo "${ck##*checkpoint-},$(row "$tmp/a/indicators.json")" >> "$tmp/by_step.csv"
done
"$posemb" analyze "$model" --len 128 --no-figures --threads 1 --out "$tmp/a" > /dev/null
echo "3000,$(row "$tmp/a/indicators.json")" >> "$tmp/by_step.csv"
mv "$tmp/by_step.csv" "$here/tupe.tables_by_step.csv.tmp"
mv "$here/tupe.tables_by_step.csv.tmp" "$here/tupe.tables_by_step.csv"
echo "seed,ti,mono,sym" > "$tmp/init.csv"
for seed in $(seq 1 20); do
    "$posemb" train --model bert --pe "$spec" --data "$data/wikitext-2" --vocab "$data/bert-base-uncased/vocab.txt" \
        --layers 4 --hidden 128 --heads 4 --seq-len 128 --batch-size 2 --steps 1 --lr 1e-12 --eval-every 0 \
        --save-every 0 --threads 1 --seed "$seed" --out "$tmp/init$seed" > /dev/null
    "$posemb" analyze "$tmp/init$seed" --len 128 --no-figures --threads 1 --out "$tmp/b" > /dev/null
    echo "$seed,$(row "$tmp/b/indicators.json")" >> "$tmp/init.csv"
    rm -rf "$tmp/init$seed" "$tmp/b"
done
mv "$tmp/init.csv" "$here/tupe.tables_init.csv.tmp"
mv "$here/tupe.tables_init.csv.tmp" "$here/tupe.tables_init.csv"
