#!/bin/sh
# Issue 51's table read-out for slice 13's absolute PEs: `posemb analyze` (no figures) on each
# pretrained model of a width, over the 128 positions pretraining used (--len 128), one thread;
# writes WIDTH/PE.indicators.json beside this script, and `ape`'s similarity indicators at every
# kept checkpoint (`posemb analyze --evolution`) as WIDTH/ape.evolution.csv (each written whole,
# then renamed).
#     results/position-learning/slice13/indicators.sh RUN POSEMB WIDTH
# RUN: the run folder (RUN/models/PE/pretrain); POSEMB: the program that ran it; WIDTH: w64 or w256.
set -eu
run=$1 posemb=$2 width=$3
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for pe in ape sin lsin; do
    "$posemb" analyze "$run/models/$pe/pretrain" --len 128 --no-figures --threads 1 --out "$tmp/$pe" > /dev/null
    cp "$tmp/$pe/indicators.json" "$here/$width/$pe.indicators.json.tmp"
    mv "$here/$width/$pe.indicators.json.tmp" "$here/$width/$pe.indicators.json"
done
"$posemb" analyze "$run/models/ape/pretrain" --evolution --len 128 --no-figures --threads 1 --out "$tmp/evolution" > /dev/null
cp "$tmp/evolution/evolution.csv" "$here/$width/ape.evolution.csv.tmp"
mv "$here/$width/ape.evolution.csv.tmp" "$here/$width/ape.evolution.csv"
