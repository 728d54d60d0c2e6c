#!/bin/sh
# Slice 24's runs (../README.md, "Slice 24"): HF's BERT APE (ape:scale=1: a learned table added at
# a fixed factor 1, no learned scale) at slice 18's 24,000 steps over 7.8 times the text, from scratch,
# pretrain_seed 1 and 2 (ape-hf-24k-s1.json, -s2.json; otherwise slice 18's ape-24k-text.json).
#   run.sh train POSEMB DATA WORK SEED...  each seed's study into WORK/sSEED (resumed from its checkpoints)
#   run.sh readout POSEMB WORK SEED...     slice11/readout.sh into slice24/sSEED, and the table's RMS
#                                          over rows 0-127 at every kept checkpoint (rms_by_step.txt)
# POSEMB: program 686c6b3 (the amplitude rule's fix: earlier programs stop on ape:scale=1), its
# libposemb.so beside it; DATA: the study's corpora with extra/ (scripts/corpus-extra); WORK: the runs'
# folders. One thread, OPENBLAS_CORETYPE=Cooperlake. PYTHON: a python3 with numpy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export OPENBLAS_CORETYPE=Cooperlake OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
case "${1:-}" in
train)
    posemb=$2 data=$3 work=$4; shift 4
    for s in "$@"; do
        mkdir -p "$work/s$s"
        "$posemb" study "$here/ape-hf-24k-s$s.json" --data "$data" --out "$work/s$s/study" --threads 1
    done ;;
readout)
    posemb=$2 work=$3; shift 3
    for s in "$@"; do
        mkdir -p "$here/s$s"
        sh "$here/../slice11/readout.sh" "$work/s$s" "$posemb" "$(dirname "$posemb")/libposemb.so" "$here/s$s"
        "${PYTHON:-python3}" "$here/rms_by_step.py" "$work/s$s/study/models/ape_scale_1/pretrain" \
            > "$here/s$s/rms_by_step.txt.tmp"
        mv "$here/s$s/rms_by_step.txt.tmp" "$here/s$s/rms_by_step.txt"
    done ;;
*)
    sed -n '2,10p' "$0" >&2; exit 2 ;;
esac
