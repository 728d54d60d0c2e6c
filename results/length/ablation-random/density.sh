#!/bin/sh
# Each randomized-RoPE model of a length study (rope+random:max=2048) read on
# the study's held-out text at the study's lengths, with the positions given
# at evaluation changed through --pe: as trained (drawn from [0, 2048), the
# study's lines), 0..L-1 (--pe rope), and drawn from [0, N) for other N. At
# length L the draw's gaps average N / L; training's were 2048 / 128 = 16.
# See ../README.md, slice 8.
#
#   sh results/length/ablation-random/density.sh RUN [DATA] > density.txt
#
# RUN is the study's --out folder (models/*-rope_random_max_2048-s*), DATA the
# folder given to --data (default ../shared/data). POSEMB names the program
# (default build/posemb).
set -eu
run=${1:?usage: density.sh RUN [DATA]}
data=${2:-../shared/data}
posemb=${POSEMB:-build/posemb}
text=$data/wikitext-2/wiki.test.tokens
[ -f "$text" ] || { echo "density.sh: $text: no such file" >&2; exit 1; }
found=0
for model in "$run"/models/*-rope_random_max_2048-s*; do
    [ -f "$model/model.safetensors" ] || continue
    found=1
    for pe in "" rope rope+random:max=1024 rope+random:max=4096 rope+random:max=8192 \
        rope+random:max=16384 rope+random:max=32768; do
        lengths=128,256,512,1024,2048
        [ "$pe" = rope+random:max=1024 ] && lengths=128,256,512,1024 # a draw of L needs L <= N
        echo "== $(basename "$model") ${pe:-as trained}"
        "$posemb" perplexity "$model" --data "$text" --lengths $lengths --tokens 65536 \
            --threads 1 ${pe:+--pe "$pe"}
    done
done
[ "$found" = 1 ] || { echo "density.sh: no trained randomized-RoPE model in $run/models" >&2; exit 1; }
