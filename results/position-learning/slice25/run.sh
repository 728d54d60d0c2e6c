#!/bin/sh
# Slice 25's runs (../README.md, "Slice 25"): BERT's own APE (ape:scale=1) and `rpe` at 24,000 steps over
# 7.8 times the text, 3 pretrainings each, fine-tuned on GLUE's five tasks and SQuAD-locate, 3 seeds each.
#   run.sh study POSEMB DATA OUT NAME   NAME.json's study into OUT (its pretraining resumed from OUT's
#                                       checkpoints, or drawn), then OUT/results.jsonl copied to
#                                       NAME.results.jsonl here
#   run.sh readout POSEMB OUT NAME      slice 11's readout.sh of OUT's pretraining into NAME/ here
# NAME: ape-hf-24k-sN or rpe-24k-sN, or NAME-pretrain (the pretraining and one RTE fine-tune only).
# OUT: WORK/NAME/study, the same for NAME-pretrain and NAME. Every pretraining is drawn by this slice
# (revised 2026-12-07 12:10 UTC: the reused ones of slices 18 and 24 went with their machine).
# POSEMB: program 686c6b3 (the amplitude rule's fix), libposemb.so beside it. One thread a run,
# or THREADS; OPENBLAS_CORETYPE: the machine's (Cooperlake on a Zen 5, Haswell on a Zen 2), recorded in
# every line. DATA: the corpora with extra/ (scripts/corpus-extra). PYTHON: a python3 with numpy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
threads=${THREADS:-1}
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
case "${1:-}" in
study)
    posemb=$2 data=$3 out=$4 name=$5
    mkdir -p "$out"
    "$posemb" study "$here/$name.json" --data "$data" --out "$out" --threads "$threads"
    cp "$out/results.jsonl" "$here/$name.results.jsonl.tmp"
    mv "$here/$name.results.jsonl.tmp" "$here/$name.results.jsonl" ;;
readout)
    posemb=$2 out=$3 name=$4
    mkdir -p "$here/$name"
    sh "$here/../slice11/readout.sh" "$(dirname "$out")" "$posemb" "$(dirname "$posemb")/libposemb.so" "$here/$name" ;;
*)
    sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
