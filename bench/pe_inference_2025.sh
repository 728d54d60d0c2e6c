#!/bin/sh
# The inference cost of two 2025 mechanisms that act at evaluation or
# through the model's config rather than in a training step's PE, on the
# length study's decoders (4 layers x 128; weights after 2 steps, which do
# not change the cost):
#   - STRING (rope:string=42,string_window=8) against plain RoPE, on GPT-2,
#     `posemb perplexity --pe` at 2048 bytes;
#   - Llama 4's chunked attention (attention_chunk_size 32 on the RoPE
#     layers of an iRoPE stack) against the same model unchunked (every
#     layer full), `posemb perplexity` at 2048 bytes;
#   - Command A's layers (windows of 64 on RoPE layers 0-2, layer 3 NoPE
#     and global, on the smollm3 task) against the same model without
#     windows (SmolLM3's layers), `posemb perplexity` at 2048 bytes.
# Each pair runs back to back, ROUNDS times (default 3), at THREADS (default
# 1). DATA: the shared data folder (default ../shared/data).
# Output: one line per run, "WHAT SECONDS {perplexity json}" (bench/README.md).
set -eu
cd "$(dirname "$0")/.." || exit 1
BUILD=${POSEMB_BUILD:-build}
THREADS=${THREADS:-1}
ROUNDS=${ROUNDS:-3}
DATA=${DATA:-../shared/data}
TEXT=$DATA/wikitext-2/wiki.test.tokens
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/gpt2.json" << 'EOF'
{"pes": ["rope"], "tasks": ["gpt2"], "seeds": [1], "lengths": [1], "steps": 2, "batch": 2, "curve_every": 2,
 "eval_tokens": 2048, "passkey_trials": 0, "passkey_train": 0, "jobs": 1}
EOF
cat > "$tmp/llama4.json" << 'EOF'
{"pes": ["rope:pairing=interleaved,layers=0-2+temperature:floor_scale=32,layers=3"], "tasks": ["llama4"],
 "seeds": [1], "lengths": [1], "steps": 2, "batch": 2, "curve_every": 2, "eval_tokens": 2048, "passkey_trials": 0,
 "passkey_train": 0, "jobs": 1, "model": {"attention_chunk_size": 32}}
EOF
cat > "$tmp/command-a.json" << 'EOF'
{"pes": ["rope:layers=0-2"], "tasks": ["smollm3"], "seeds": [1], "lengths": [1], "steps": 2, "batch": 2,
 "curve_every": 2, "eval_tokens": 2048, "passkey_trials": 0, "passkey_train": 0, "jobs": 1,
 "model": {"use_sliding_window": true, "sliding_window": 64,
           "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"]}}
EOF
for s in gpt2 llama4 command-a; do
  "$BUILD"/posemb study "$tmp/$s.json" --length --data "$DATA" --out "$tmp/$s" --threads 1 > /dev/null 2>&1
done
gpt2=$(ls -d "$tmp"/gpt2/models/gpt2-rope-s1)
chunked=$(ls -d "$tmp"/llama4/models/llama4-*-s1)
full=$tmp/llama4-full
cp -r "$chunked" "$full"
python3 - "$full/config.json" << 'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["attention_chunk_size"] = None
c["layer_types"] = ["full_attention"] * len(c["layer_types"])
json.dump(c, open(sys.argv[1], "w"))
EOF
windowed=$(ls -d "$tmp"/command-a/models/smollm3-*-s1)
unwindowed=$tmp/smollm3-full
cp -r "$windowed" "$unwindowed"
python3 - "$unwindowed/config.json" << 'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["use_sliding_window"] = False
json.dump(c, open(sys.argv[1], "w"))
EOF
run() { # WHAT MODEL [--pe SPEC]
  what=$1 model=$2
  shift 2
  t0=$(date +%s.%N)
  out=$("$BUILD"/posemb perplexity "$model" --data "$TEXT" --tokens 16384 --lengths 2048 --json --threads "$THREADS" "$@")
  t1=$(date +%s.%N)
  echo "$what $(echo "$t1 - $t0" | bc) $out"
}
r=0
while [ "$r" -lt "$ROUNDS" ]; do
  r=$((r + 1))
  run gpt2-rope "$gpt2"
  run gpt2-rope+string "$gpt2" --pe rope:string=42,string_window=8
  run llama4-full "$full"
  run llama4-chunked "$chunked"
  run smollm3-full "$unwindowed"
  run command-a-windowed "$windowed"
done
