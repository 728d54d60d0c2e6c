#!/bin/sh
# Slice 20's runs (../README.md, "Slice 20"), and slice 19's recipe they share
# (recipe.sh: `posemb train --model bert --init DIR` on the four corpora linked in the
# study's order, 4000 steps, lr 1e-3 with 400 warm-up steps, batch 32 x 128, dropout
# 0.1, a checkpoint every 500 steps, all kept; one thread, OPENBLAS_CORETYPE=Cooperlake).
#
#   run.sh inits SLICE18_MODEL WORK      slice 19's starts (make_inits.py, scale 0.713, seed 1)
#                                        and slice 20's fresh one (make_fresh.py, seed 3) in WORK/inits
#   run.sh check POSEMB DATA WORK        slice 19's sinusoid arm's first 200 steps: their losses
#                                        must equal its committed log (prints "N of 200 ... equal")
#   run.sh readout POSEMB CACHE WORK RUN...  slice11/readout.sh over the finished RUNs into
#                                        slice20/readout (CACHE: slice 18's study cache folder)
#   run.sh train POSEMB DATA WORK RUN... each RUN (ARM-sSEED: frozen-fresh, frozen-shuffled,
#                                        frozen-ordered, fixed-factor; seeds 1, 2) into WORK/RUN,
#                                        resumed from its last checkpoint if it has one
#
# SLICE18_MODEL: slice 18's final `ape` model (RUN/models/ape/pretrain of
# slice18/ape-24k-text.json, program 7afb88d); DATA: a folder with the study's
# corpora and extra/ (scripts/corpus-extra); WORK: where starts, runs and logs go.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/recipe.sh"

arm() { # ARM WORK: the start and PE of one of slice 20's arms
    case $1 in
        frozen-fresh) init=$2/inits/fresh pe=ape:scale=0.713,frozen=on ;;
        frozen-shuffled) init=$2/inits/shuffled pe=ape:scale=0.713,frozen=on ;;
        frozen-ordered) init=$2/inits/ordered pe=ape:scale=0.713,frozen=on ;;
        fixed-factor) init=$2/inits/ordered pe=ape:scale=0.713 ;;
        *) echo "run.sh: $1: not one of slice 20's arms" >&2; exit 2 ;;
    esac
}

case "${1:-}" in
inits)
    "${PYTHON:-python3}" "$here/../slice19/make_inits.py" "$2" "$3/inits" 0.713 1
    "${PYTHON:-python3}" "$here/make_fresh.py" "$3/inits/ordered" "$3/inits/fresh" 3 ;;
check)
    corpus "$3" "$4"
    check200 "$2" "$4" "$4/inits/ordered" sin:scale=0.05 "$4/check" ;;
train)
    posemb=$2 data=$3 work=$4; shift 4
    train_runs "$posemb" "$data" "$work" "$@" ;;
readout)
    posemb=$2 cache=$3 work=$4; shift 4
    readout "$posemb" "$cache" "$work" "$here/readout" "$@" ;;
*)
    sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
