#!/bin/sh
# Slice 25's runs (../README.md, "Slice 25"): BERT's own APE (ape:scale=1) and `rpe` at 24,000 steps over
# 7.8 times the text, 3 pretrainings each, fine-tuned on GLUE's five tasks and SQuAD-locate, 3 seeds each.
#   run.sh study POSEMB DATA OUT NAME   NAME.json's study into OUT (its pretraining resumed from OUT's
#                                       checkpoints, or drawn); each start appended to NAME.starts.txt
#                                       here (time, machine, threads, kernels, the program's version)
#   run.sh readout POSEMB OUT NAME      slice 11's readout.sh of OUT's pretraining into NAME/ here
#   run.sh lines OUT NAME               OUT/results.jsonl copied to NAME.results.jsonl here
# NAME: ape-hf-24k-sN or rpe-24k-sN (NAME-pretrain, the pretraining and one RTE fine-tune, was the gate,
# open since 2026-12-07 07:27). OUT: WORK/NAME/study. Every pretraining is drawn by this slice (revised
# 2026-12-07 12:10 UTC: the reused ones of slices 18 and 24 went with their machine). POSEMB: program
# 686c6b3 (the amplitude rule's fix), libposemb.so beside it. THREADS: 1 by default. OPENBLAS_CORETYPE
# must be set, to the machine's (Haswell on a Zen 2, Cooperlake on a Zen 5): the lines record it.
# DATA: the corpora with extra/ (scripts/corpus-extra). PYTHON: a python3 with numpy.
set -eu
here=$(CDPATH= cd "$(dirname "$0")" && pwd)
threads=${THREADS:-1}
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$threads
: "${OPENBLAS_CORETYPE:?run.sh: set OPENBLAS_CORETYPE to the machine's kernels (Haswell on a Zen 2, Cooperlake on a Zen 5)}"
export OPENBLAS_CORETYPE
study_folder() {
    case $1 in */study) ;; *) echo "run.sh: $1: OUT is WORK/NAME/study" >&2; exit 2 ;; esac
}
case "${1:-}" in
study)
    posemb=$2 data=$3 out=$4 name=$5
    study_folder "$out"
    mkdir -p "$out"
    cpu=$(awk -F': ' '/^cpu family/ { f = $2 } /^model\t/ { m = $2 } END { print "family " f " model " m }' /proc/cpuinfo)
    echo "$(date -u '+%Y-%m-%d %H:%M:%S') UTC, $(uname -n), CPU $cpu, $(nproc --all) cores, threads $threads," \
        "$("$posemb" --version)" >> "$here/$name.starts.txt"
    "$posemb" study "$here/$name.json" --data "$data" --out "$out" --threads "$threads" ;;
readout)
    posemb=$2 out=$3 name=$4
    study_folder "$out"
    mkdir -p "$here/$name"
    sh "$here/../slice11/readout.sh" "$(dirname "$out")" "$posemb" "$(dirname "$posemb")/libposemb.so" "$here/$name" ;;
lines)
    out=$2 name=$3
    study_folder "$out"
    cp "$out/results.jsonl" "$here/$name.results.jsonl.tmp"
    mv "$here/$name.results.jsonl.tmp" "$here/$name.results.jsonl" ;;
*)
    sed -n '2,14p' "$0" >&2; exit 2 ;;
esac
