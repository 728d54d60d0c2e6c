#!/bin/sh
# Slice 20's runs (../README.md, "Slice 20"), and slice 19's recipe they share:
# `posemb train --model bert --init DIR` on the four corpora linked in the study's
# order (1-wikitext-2 2-janeausten 3-tinyshakespeare 4-extra, so that the held-out
# 5%, the tail, lies in extra/), 4000 steps, lr 1e-3 with 400 warm-up steps, batch
# 32 x 128, dropout 0.1, a checkpoint every 500 steps, all kept; one thread,
# OPENBLAS_CORETYPE=Cooperlake.
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
export OPENBLAS_CORETYPE=Cooperlake OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

corpus() { # the corpora in the study's order, as links
    mkdir -p "$2/corpus"
    for c in 1-wikitext-2 2-janeausten 3-tinyshakespeare 4-extra; do ln -sfn "$1/${c#?-}" "$2/corpus/$c"; done
}

train() { # POSEMB WORK INIT PE SEED OUT
    if ls -d "$6"/checkpoint-* >/dev/null 2>&1; then
        "$1" train --resume --out "$6" --threads 1
    else
        "$1" train --model bert --init "$3" --pe "$4" --data "$2/corpus" --out "$6" --steps 4000 --lr 1e-3 \
            --warmup 400 --batch-size 32 --seq-len 128 --dropout 0.1 --seed "$5" --save-every 500 \
            --eval-every 500 --keep 100 --threads 1
    fi
}

case "${1:-}" in
inits)
    "${PYTHON:-python3}" "$here/../slice19/make_inits.py" "$2" "$3/inits" 0.713 1
    "${PYTHON:-python3}" "$here/make_fresh.py" "$3/inits/ordered" "$3/inits/fresh" 3 ;;
check)
    corpus "$3" "$4"
    out=$4/check; rm -rf "$out"
    train "$2" "$4" "$4/inits/ordered" sin:scale=0.05 1 "$out" > "$out.log" 2>&1 &
    pid=$!
    while kill -0 $pid 2>/dev/null; do
        n=$(grep -c '"kind": "train"' "$out/train_log.jsonl" 2>/dev/null) || n=0
        [ "$n" -ge 200 ] && break
        sleep 2
    done
    kill $pid 2>/dev/null || true; wait $pid 2>/dev/null || true
    head -2 "$out.log"
    python3 - "$out/train_log.jsonl" "$here/../slice19/readout/sinusoid-s1.train_log.jsonl" <<'PY'
import json, sys
def losses(p):
    return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if r.get("kind") == "train" and r["step"] <= 200}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
print(f"{sum(a.get(s) == b[s] for s in b)} of {len(b)} steps' losses equal slice 19's sinusoid arm's (this run logged {len(a)})")
PY
    ;;
train)
    posemb=$2 data=$3 work=$4; shift 4
    corpus "$data" "$work"
    for r in "$@"; do
        case ${r%-s?} in
            frozen-fresh) init=$work/inits/fresh pe=ape:scale=0.713,frozen=on ;;
            frozen-shuffled) init=$work/inits/shuffled pe=ape:scale=0.713,frozen=on ;;
            frozen-ordered) init=$work/inits/ordered pe=ape:scale=0.713,frozen=on ;;
            fixed-factor) init=$work/inits/ordered pe=ape:scale=0.713 ;;
            *) echo "run.sh: $r: not one of slice 20's runs" >&2; exit 2 ;;
        esac
        [ -f "$work/$r/model.safetensors" ] && { echo "$r: done"; continue; }
        echo "$r: start $(date -u +%FT%TZ)"
        train "$posemb" "$work" "$init" "$pe" "${r##*-s}" "$work/$r" >> "$work/$r.log" 2>&1
        echo "$r: ended $(date -u +%FT%TZ)"
    done ;;
readout)
    posemb=$2 cache=$3 work=$4; shift 4
    run=$work/readrun; rm -rf "$run"; mkdir -p "$run/study/models" "$here/readout"
    ln -s "$cache" "$run/study/cache"
    for r in "$@"; do mkdir -p "$run/study/models/$r"; ln -s "$work/$r" "$run/study/models/$r/pretrain"; done
    "$here/../slice11/readout.sh" "$run" "$posemb" "$(dirname "$posemb")/libposemb.so" "$here/readout" ;;
*)
    sed -n '2,24p' "$0" >&2; exit 2 ;;
esac
