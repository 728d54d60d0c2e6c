#!/bin/sh
# Slice 26's runs (../README.md, "Slice 26"): `lsin:scale=0.05` for 6000 steps on the study's text,
# pretrain_seed 1 and 2, each by `posemb study lsin-0.05-6000-sN.json --data DATA --out WORK/sN/study`
# (one thread, OPENBLAS_CORETYPE=Cooperlake), then read out by slice11/readout.sh into slice26/sN and
# its lines copied to lsin-0.05-6000-sN.results.jsonl. A seed already read out is skipped; an
# unfinished one resumes from its folder.
#   run.sh POSEMB DATA WORK [SEED...]
# POSEMB: program 686c6b3, its libposemb.so beside it; DATA: the study's corpora.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { sed -n '2,8p' "$0" >&2; exit 2; }
p=$1 data=$2 work=$3; shift 3
export OPENBLAS_CORETYPE=Cooperlake OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
for s in ${*:-1 2}; do
    [ -f "$here/s$s/order.txt" ] && { echo "s$s: read out already"; continue; }
    echo "s$s: start $(date -u +%FT%TZ)"
    mkdir -p "$work/s$s" "$here/s$s"
    "$p" study "$here/lsin-0.05-6000-s$s.json" --data "$data" --out "$work/s$s/study" --threads 1
    "$here/../slice11/readout.sh" "$work/s$s" "$p" "$(dirname "$p")/libposemb.so" "$here/s$s"
    cp "$work/s$s/study/results.jsonl" "$here/lsin-0.05-6000-s$s.results.jsonl.tmp"
    mv "$here/lsin-0.05-6000-s$s.results.jsonl.tmp" "$here/lsin-0.05-6000-s$s.results.jsonl"
    echo "s$s: read out $(date -u +%FT%TZ)"
done
