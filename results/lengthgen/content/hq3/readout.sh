#!/bin/sh
# HQ3's experiment read out (../README.md, "HQ3's failure: an experiment",
# and "Plain RoPE's lean on the token just written, by alphabet"): each
# retrained run's lines against the slice's (same_lines.py), then
# hq3_errors.py on each kept model at 84 tokens. Writes errors.txt (SET
# a8, the default: rope at 8 symbols and the control) or
# errors-alphabets.txt (SET alphabets: rope at 16 and 48 symbols) here
# (whole, then renamed).
#     results/lengthgen/content/hq3/readout.sh RUNS LIBPOSEMB [SET]
# RUNS: the folder holding the study folders hq3-NAME; LIBPOSEMB: a
# libposemb.so for the Python module; $PYTHON (default python3) with numpy.
set -eu
runs=$1 lib=$2 set=${3:-a8}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
py=${PYTHON:-python3}
# run folder, the model's folder under models/ (the study's name for the PE), alphabet
case $set in
a8) out=errors.txt
    models="rope-a8-s1:rope:8 rope-a8-s2:rope:8 rope-a8-s3:rope:8 random-a16-s1:rope_random_max_168:16" ;;
alphabets) out=errors-alphabets.txt
    models="rope-a16-s1:rope:16 rope-a16-s2:rope:16 rope-a16-s3:rope:16 rope-a48-s1:rope:48 rope-a48-s2:rope:48 rope-a48-s3:rope:48" ;;
*) echo "readout.sh: SET must be a8 or alphabets, not '$set'" >&2; exit 2 ;;
esac
{
    echo "# HQ3's experiment ($set), $(date -u +%Y-%m-%d), $(uname -m)"
    "$py" "$here/same_lines.py" $(for m in $models; do echo "$runs/hq3-${m%%:*}"; done)
    for m in $models; do
        run=${m%%:*} rest=${m#*:}
        pe=${rest%:*} alphabet=${rest##*:}
        echo
        OMP_NUM_THREADS=1 PYTHONPATH="$root/python" POSEMB_LIBRARY="$lib" \
            "$py" "$here/../hq3_errors.py" "$runs/hq3-$run/models/$pe" "$alphabet"
    done
} > "$here/$out.tmp"
mv "$here/$out.tmp" "$here/$out"
