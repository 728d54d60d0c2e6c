#!/bin/sh
# Slice 25's runs (../README.md, "Slice 25"): BERT's own APE (ape:scale=1) and `rpe` at 24,000 steps over
# 7.8 times the text, 3 pretrainings each, fine-tuned on GLUE's five tasks and SQuAD-locate, 3 seeds each.
#   run.sh copy-rpe1 SRC WORK           slice 18's `rpe` pretraining (SRC: its models/rpe/pretrain) into
#                                       WORK/rpe-24k-s1/study, its final checkpoint and model only
#   run.sh study POSEMB DATA OUT NAME   NAME.json's study into OUT (its pretraining resumed or reused),
#                                       then OUT/results.jsonl copied to NAME.results.jsonl here
#   run.sh readout POSEMB OUT NAME      slice 11's readout.sh of OUT's pretraining into NAME/ here
# NAME: ape-hf-24k-sN or rpe-24k-sN, or NAME-pretrain (the pretraining and one RTE fine-tune only: the
# gate). OUT: slice 24's WORK/sN/study for ape-hf-24k-s1 and -s2 (their pretrainings and RTE seed-1 lines
# reused; required to hold them), WORK/rpe-24k-s1/study for rpe-24k-s1 (required to hold the copy),
# WORK/NAME/study otherwise. POSEMB: program 686c6b3 (the amplitude rule's fix), libposemb.so beside it.
# One thread, OPENBLAS_CORETYPE=Cooperlake. DATA: the corpora with extra/. PYTHON: a python3 with numpy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
export OPENBLAS_CORETYPE=Cooperlake OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
case "${1:-}" in
copy-rpe1)
    src=$2 dst=$3/rpe-24k-s1/study/models/rpe/pretrain
    test -f "$src/checkpoint-24000/model.safetensors" || { echo "$src: no checkpoint-24000" >&2; exit 1; }
    test ! -e "$dst" || { echo "$dst: exists already" >&2; exit 1; }
    rm -rf "$dst.tmp"
    mkdir -p "$dst.tmp"
    cp -r "$src/checkpoint-24000" "$src/config.json" "$src/model.safetensors" "$src/train_log.jsonl" \
        "$src/vocab.txt" "$dst.tmp/"
    mv "$dst.tmp" "$dst" ;;
study)
    posemb=$2 data=$3 out=$4 name=$5
    case $name in # a pretraining that must be there already is not drawn again by a wrong OUT
    ape-hf-24k-s[12]*) test -f "$out/models/ape_scale_1/pretrain/pretrain.json" ;;
    rpe-24k-s1*) test -f "$out/models/rpe/pretrain/checkpoint-24000/model.safetensors" ;;
    esac || { echo "$out: not the folder of $name's pretraining" >&2; exit 1; }
    mkdir -p "$out"
    "$posemb" study "$here/$name.json" --data "$data" --out "$out" --threads 1
    cp "$out/results.jsonl" "$here/$name.results.jsonl.tmp"
    mv "$here/$name.results.jsonl.tmp" "$here/$name.results.jsonl" ;;
readout)
    posemb=$2 out=$3 name=$4
    mkdir -p "$here/$name"
    sh "$here/../slice11/readout.sh" "$(dirname "$out")" "$posemb" "$(dirname "$posemb")/libposemb.so" "$here/$name" ;;
*)
    sed -n '2,13p' "$0" >&2; exit 2 ;;
esac
