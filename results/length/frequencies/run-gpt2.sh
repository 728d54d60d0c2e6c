#!/bin/sh
# Slice 2 of the frequencies (README.md, "Slice 2"): GPT-2's rope models of the length study trained again
# and read as slice 1 read Llama's. Usage: run-gpt2.sh POSEMB DATA RUN
#   POSEMB  the program (its commit in the README); DATA  ../shared/data; RUN  a work folder (resumable)
set -eu
posemb=$1 data=$2 run=$3
here=$(cd "$(dirname "$0")" && pwd)
export OPENBLAS_CORETYPE=Cooperlake
"$posemb" study "$here/gpt2-rope.json" --length --data "$data" --out "$run" --threads 1
mkdir -p "$run/analysis"
for s in 1 2 3; do
  "$posemb" analyze "$run/models/gpt2-rope-s$s" --text "$data/wikitext-2/wiki.test.tokens" --len 128 \
    --out "$run/analysis/gpt2-rope-s$s"
  mkdir -p "$here/usage/gpt2-rope-s$s"
  cp "$run/analysis/gpt2-rope-s$s/rotary_q.csv" "$run/analysis/gpt2-rope-s$s/rotary_k.csv" "$here/usage/gpt2-rope-s$s/"
done
cp "$run/results.jsonl" "$here/gpt2.results.jsonl"
/usr/bin/python3 "$here/usage.py" "$here"/usage/gpt2-rope-s1 "$here"/usage/gpt2-rope-s2 "$here"/usage/gpt2-rope-s3 \
  > "$here/usage-gpt2.txt"
