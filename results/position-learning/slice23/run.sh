#!/bin/sh
# Slice 23's runs (../README.md, "Slice 23"): slice 20's recipe (slice20/recipe.sh:
# slice 19's `posemb train` command from a model folder) from slice 19's ordered start:
#   fixed-factor-8k   its table learnable at the fixed factor (ape:scale=0.713), 8000 steps
#   learned-scale-8k  its table and its learned scale (0.713 at the start), 8000 steps
#   smooth-a, smooth-b  a smooth code at the sinusoid's amplitude frozen in the table
#                     (ape:scale=0.05,frozen=on), 4000 steps; make_smooth.py's two draws
#
#   run.sh inits ORDERED WORK            make_smooth.py (seed 6) from slice 19's ordered
#                                        start (slice20/run.sh inits writes it) into WORK/inits
#   run.sh check POSEMB DATA ORDERED WORK  the first 200 steps of seed 1 of each 8000-step
#                                        arm: their losses must equal the 4000-step run's
#                                        log of the same start and PE (slice 20's fixed-factor-s1,
#                                        slice 19's ordered-s1); prints "N of 200 ... equal" twice
#   run.sh train POSEMB DATA ORDERED WORK RUN...  each RUN (fixed-factor-8k-s1, -s2,
#                                        learned-scale-8k-s1, -s2, smooth-a-s1, smooth-b-s2)
#                                        into WORK/RUN, resumed from its last checkpoint if it has one
#   run.sh readout POSEMB CACHE ORDERED WORK RUN...  slice11/readout.sh over the finished RUNs
#                                        (name every finished run: order.txt is rewritten) into
#                                        slice23/readout, slice 22's frozen.py for the smooth runs
#                                        (frozen.txt), tables.py for the learnable tables (tables.txt)
#
# POSEMB: program a165e11 (slices 20 and 22's); ORDERED: slice 19's ordered start
# (WORK of slice20/run.sh inits, inits/ordered); DATA: a folder with the study's
# corpora and extra/ (scripts/corpus-extra); WORK: where starts, runs and logs go;
# PYTHON: a python3 with numpy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../slice20/recipe.sh"

arm() { # ARM WORK: the start, PE and steps of one of slice 23's arms (ORDERED: $ordered)
    case $1 in
        fixed-factor-8k) init=$ordered pe=ape:scale=0.713 arm_steps=8000 ;;
        learned-scale-8k) init=$ordered pe=ape:scale=1,learned_scale=on arm_steps=8000 ;;
        smooth-a | smooth-b) init=$2/inits/$1 pe=ape:scale=0.05,frozen=on arm_steps=4000 ;;
        *) echo "run.sh: $1: not one of slice 23's arms" >&2; exit 2 ;;
    esac
}

case "${1:-}" in
inits)
    "${PYTHON:-python3}" "$here/make_smooth.py" "$2" "$3/inits" 6 ;;
check)
    posemb=$2 data=$3 ordered=$4 work=$5
    corpus "$data" "$work"
    for a in fixed-factor-8k learned-scale-8k; do
        arm $a "$work"
        case $a in
            fixed-factor-8k) log=$here/../slice20/readout/fixed-factor-s1.train_log.jsonl ;;
            *) log=$here/../slice19/readout/ordered-s1.train_log.jsonl ;;
        esac
        check200 "$posemb" "$work" "$init" "$pe" "$work/check-$a" "$log"
    done ;;
train)
    posemb=$2 data=$3 ordered=$4 work=$5; shift 5
    train_runs "$posemb" "$data" "$work" "$@" ;;
readout)
    posemb=$2 cache=$3 ordered=$4 work=$5; shift 5
    readout "$posemb" "$cache" "$work" "$here/readout" "$@"
    "${PYTHON:-python3}" "$here/tables.py" "$posemb" "$ordered" "$work" > "$here/readout/tables.txt.tmp"
    mv "$here/readout/tables.txt.tmp" "$here/readout/tables.txt"
    smooth=$(for r in "$@"; do case $r in smooth-*) echo "$r" ;; esac; done)
    if [ -n "$smooth" ]; then
        "${PYTHON:-python3}" "$here/../slice22/frozen.py" "$work" $smooth > "$here/readout/frozen.txt.tmp"
        mv "$here/readout/frozen.txt.tmp" "$here/readout/frozen.txt"
    fi ;;
*)
    sed -n '2,26p' "$0" >&2; exit 2 ;;
esac
