#!/bin/sh
# Slice 21's runs (../README.md, "Slice 21"): each config, in the plan's order, by
# `posemb study CONFIG --data DATA --out WORK/SETTING` (one thread,
# OPENBLAS_CORETYPE=Cooperlake), then read out by slice11/readout.sh into
# slice21/SETTING. A setting already read out is skipped; an unfinished one resumes
# from its folder (a lost folder runs again whole).
#   run.sh POSEMB_7AFB88D POSEMB_9DADC9B DATA WORK [SETTING...]
# POSEMB_9DADC9B runs warmup-1500 (7afb88d does not know pretrain_warmup); DATA: the
# study's corpora and extra/ (scripts/corpus-extra); each POSEMB's folder holds its
# libposemb.so, which the read-out's order_ablation.py loads.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 4 ] || { sed -n '2,10p' "$0" >&2; exit 2; }
p7=$1 p9=$2 data=$3 work=$4; shift 4
export OPENBLAS_CORETYPE=Cooperlake OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
for s in ${*:-lr3e-4 lr1e-4 text-0.25x text-7.8x warmup-1500}; do
    [ -f "$here/$s/order.txt" ] && { echo "$s: read out already"; continue; }
    p=$p7; [ "$s" = warmup-1500 ] && p=$p9
    echo "$s: start $(date -u +%FT%TZ)"
    mkdir -p "$work/$s"
    "$p" study "$here/$s.json" --data "$data" --out "$work/$s/study" --threads 1
    mkdir -p "$here/$s"
    "$here/../slice11/readout.sh" "$work/$s" "$p" "$(dirname "$p")/libposemb.so" "$here/$s"
    cp "$work/$s/study/results.jsonl" "$here/$s.results.jsonl"
    echo "$s: read out $(date -u +%FT%TZ)"
done
