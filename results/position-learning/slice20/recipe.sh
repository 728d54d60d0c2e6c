# Slice 19's recipe, which slices 20 and 22 run (sourced by their run.sh; sets
# OPENBLAS_CORETYPE=Cooperlake and one thread): `posemb train --model bert --init DIR`
# on the four corpora linked in the study's order (1-wikitext-2 2-janeausten
# 3-tinyshakespeare 4-extra, so that the held-out 5%, the tail, lies in extra/),
# 4000 steps (or $arm_steps, which a caller's `arm` may set: slice 23), lr 1e-3 with 400
# warm-up steps, batch 32 x 128, dropout 0.1, a checkpoint every 500 steps, all kept.
export OPENBLAS_CORETYPE=Cooperlake OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

corpus() { # DATA WORK: the corpora in the study's order, as links in WORK/corpus
    mkdir -p "$2/corpus"
    for c in 1-wikitext-2 2-janeausten 3-tinyshakespeare 4-extra; do ln -sfn "$1/${c#?-}" "$2/corpus/$c"; done
}

arm_steps=4000 # a run's steps: 4000 unless the caller's `arm` sets it (an environment variable does not)

train() { # POSEMB WORK INIT PE SEED OUT: one run, resumed from its last checkpoint if it has one
    if ls -d "$6"/checkpoint-* >/dev/null 2>&1; then
        "$1" train --resume --out "$6" --threads 1
    else
        "$1" train --model bert --init "$3" --pe "$4" --data "$2/corpus" --out "$6" --steps "$arm_steps" --lr 1e-3 \
            --warmup 400 --batch-size 32 --seq-len 128 --dropout 0.1 --seed "$5" --save-every 500 \
            --eval-every 500 --keep 100 --threads 1
    fi
}

train_runs() { # POSEMB DATA WORK RUN...: each RUN (ARM-sSEED) into WORK/RUN, its start and PE set by the
               # caller's `arm ARM WORK` (init=..., pe=...; it exits on an unknown ARM); a run whose final
               # model exists is skipped
    _posemb=$1 _data=$2 _work=$3; shift 3
    corpus "$_data" "$_work"
    for _r in "$@"; do
        arm_steps=4000
        arm "${_r%-s?}" "$_work"
        [ -f "$_work/$_r/model.safetensors" ] && { echo "$_r: done"; continue; }
        echo "$_r: start $(date -u +%FT%TZ)"
        train "$_posemb" "$_work" "$init" "$pe" "${_r##*-s}" "$_work/$_r" >> "$_work/$_r.log" 2>&1
        echo "$_r: ended $(date -u +%FT%TZ)"
    done
}

readout() { # POSEMB CACHE WORK OUT RUN...: slice11/readout.sh over WORK's finished RUNs into OUT ($here: the caller's folder)
    _posemb=$1 _cache=$2 _work=$3 _out=$4; shift 4
    _run=$_work/readrun; rm -rf "$_run"; mkdir -p "$_run/study/models" "$_out"
    ln -s "$_cache" "$_run/study/cache"
    for _r in "$@"; do mkdir -p "$_run/study/models/$_r"; ln -s "$_work/$_r" "$_run/study/models/$_r/pretrain"; done
    "$here/../slice11/readout.sh" "$_run" "$_posemb" "$(dirname "$_posemb")/libposemb.so" "$_out"
}

check200() { # POSEMB WORK INIT PE OUT [LOG]: the first 200 steps of seed 1 from INIT with PE into OUT;
             # prints how many of their losses equal LOG's (default slice 19's sinusoid arm's train
             # log; $here: the caller's folder)
    rm -rf "$5"
    train "$1" "$2" "$3" "$4" 1 "$5" > "$5.log" 2>&1 &
    _pid=$!
    while kill -0 $_pid 2>/dev/null; do
        _n=$(grep -c '"kind": "train"' "$5/train_log.jsonl" 2>/dev/null) || _n=0
        [ "$_n" -ge 200 ] && break
        sleep 2
    done
    # $_pid is the subshell running train(); posemb is its child, which must be stopped too
    pkill -P $_pid 2>/dev/null || true; kill $_pid 2>/dev/null || true; wait $_pid 2>/dev/null || true
    head -2 "$5.log"
    python3 - "$5/train_log.jsonl" "${6:-$here/../slice19/readout/sinusoid-s1.train_log.jsonl}" <<'PY'
import json, sys
def losses(p):
    return {r["step"]: r["loss"] for r in map(json.loads, open(p)) if r.get("kind") == "train" and r["step"] <= 200}
a, b = losses(sys.argv[1]), losses(sys.argv[2])
print(f"{sum(a.get(s) == b[s] for s in b)} of {len(b)} steps' losses equal {sys.argv[2].split('/')[-1]}'s (this run logged {len(a)})")
PY
}
