#!/bin/sh
# HQ3's experiment read out (../README.md, "HQ3's failure: an experiment"):
# each retrained run's lines against the slice's (same_lines.py), then
# hq3_errors.py on each kept model at 84 tokens. Writes errors.txt here
# (whole, then renamed).
#     results/lengthgen/content/hq3/readout.sh RUNS LIBPOSEMB
# RUNS: the folder holding the study folders hq3-rope-a8-s1..3 and
# hq3-random-a16-s1; LIBPOSEMB: a libposemb.so for the Python module; $PYTHON
# (default python3) with numpy.
set -eu
runs=$1 lib=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
py=${PYTHON:-python3}
{
    echo "# HQ3's experiment, $(date -u +%Y-%m-%d), $(uname -m)"
    "$py" "$here/same_lines.py" "$runs"/hq3-rope-a8-s1 "$runs"/hq3-rope-a8-s2 "$runs"/hq3-rope-a8-s3 "$runs"/hq3-random-a16-s1
    # run folder, the model's folder under models/ (the study's name for the PE), alphabet
    for m in rope-a8-s1:rope:8 rope-a8-s2:rope:8 rope-a8-s3:rope:8 random-a16-s1:rope_random_max_168:16; do
        run=${m%%:*} rest=${m#*:}
        pe=${rest%:*} alphabet=${rest##*:}
        echo
        OMP_NUM_THREADS=1 PYTHONPATH="$root/python" POSEMB_LIBRARY="$lib" \
            "$py" "$here/../hq3_errors.py" "$runs/hq3-$run/models/$pe" "$alphabet"
    done
} > "$here/errors.txt.tmp"
mv "$here/errors.txt.tmp" "$here/errors.txt"
