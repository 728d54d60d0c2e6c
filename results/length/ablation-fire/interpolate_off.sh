#!/bin/sh
# Each FIRE model of a length study read twice, on the study's held-out text,
# lengths and passkey prompts: as trained (progressive interpolation) and
# with --pe fire:interpolate=off (every query normalised by psi(Lt)).
# The first reproduces the study's lines; see ../README.md, slice 5.
#
#   sh results/length/ablation-fire/interpolate_off.sh RUN [DATA]
#
# RUN is the study's --out folder (models/*-fire-s*), DATA the folder given to
# --data (default ../shared/data). POSEMB names the program (default build/posemb).
set -eu
run=${1:?usage: interpolate_off.sh RUN [DATA]}
data=${2:-../shared/data}
posemb=${POSEMB:-build/posemb}
text=$data/wikitext-2/wiki.test.tokens
[ -f "$text" ] || { echo "interpolate_off.sh: $text: no such file" >&2; exit 1; }
found=0
for model in "$run"/models/*-fire-s*; do
    [ -f "$model/config.json" ] || continue
    found=1
    seed=${model##*-s}  # the study draws a run's passkeys from its seed
    for pe in "" "fire:interpolate=off"; do
        echo "== $(basename "$model") ${pe:-as trained}"
        "$posemb" perplexity "$model" --data "$text" --lengths 128,256,512,1024,2048 --tokens 65536 \
            --threads 1 ${pe:+--pe "$pe"}
        "$posemb" passkey "$model" --lengths 128,256,512,1024,2048 --seed "$seed" --threads 1 ${pe:+--pe "$pe"}
    done
done
[ "$found" = 1 ] || { echo "interpolate_off.sh: no trained FIRE model in $run/models" >&2; exit 1; }
