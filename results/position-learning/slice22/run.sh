#!/bin/sh
# Slice 22's runs (../README.md, "Slice 22"): slice 20's recipe (slice20/recipe.sh:
# slice 19's `posemb train` command, 4000 steps from a model folder) with a frozen
# position table at the fixed factor 0.05 (`ape:scale=0.05,frozen=on`), the table
# replaced by make_codes.py.
#
#   run.sh inits ORDERED WORK            make_codes.py (seed 5) from slice 19's ordered start
#                                        (slice20/run.sh inits writes it) into WORK/inits
#   run.sh check POSEMB DATA WORK        frozen-sin's first 200 steps of seed 1: their losses
#                                        must equal slice 19's sinusoid arm's log (prints "N of 200 ... equal")
#   run.sh train POSEMB DATA WORK RUN... each RUN (ARM-sSEED: frozen-sin, frozen-sin-shuffled,
#                                        frozen-sin-rotated, frozen-smooth; seeds 1, 2) into
#                                        WORK/RUN, resumed from its last checkpoint if it has one
#   run.sh readout POSEMB CACHE WORK RUN...  slice11/readout.sh over the finished RUNs (name every
#                                        finished run: order.txt is rewritten) into slice22/readout,
#                                        and frozen.py's check that each table is its start's
#
# POSEMB: program a165e11 (slice 20's); DATA: a folder with the study's corpora and
# extra/ (scripts/corpus-extra); WORK: where starts, runs and logs go; PYTHON: a
# python3 with numpy.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../slice20/recipe.sh"
PE=ape:scale=0.05,frozen=on

arm() { # ARM WORK: the start and PE of one of slice 22's arms
    case $1 in
        frozen-sin | frozen-sin-shuffled | frozen-sin-rotated | frozen-smooth) init=$2/inits/${1#frozen-} pe=$PE ;;
        *) echo "run.sh: $1: not one of slice 22's arms" >&2; exit 2 ;;
    esac
}

case "${1:-}" in
inits)
    "${PYTHON:-python3}" "$here/make_codes.py" "$2" "$3/inits" 5 ;;
check)
    corpus "$3" "$4"
    check200 "$2" "$4" "$4/inits/sin" "$PE" "$4/check" ;;
train)
    posemb=$2 data=$3 work=$4; shift 4
    train_runs "$posemb" "$data" "$work" "$@" ;;
readout)
    posemb=$2 cache=$3 work=$4; shift 4
    readout "$posemb" "$cache" "$work" "$here/readout" "$@"
    "${PYTHON:-python3}" "$here/frozen.py" "$work" "$@" > "$here/readout/frozen.txt.tmp"
    mv "$here/readout/frozen.txt.tmp" "$here/readout/frozen.txt" ;;
*)
    sed -n '2,20p' "$0" >&2; exit 2 ;;
esac
