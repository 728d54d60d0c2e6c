"""FoX's forget gates in a trained decoder of the length study (GPT-2 or Llama): per layer, the learned bias and,
over 8 windows of 128 bytes of WikiText-2's test set, each head's mean gate f = sigmoid(w . x + b) and mean ln f,
with x the layer's normalised input (ln_1 for GPT-2, the input RMSNorm for Llama) recomputed from the model's
hidden states (Model.forward), as src/pe/fox.c defines it. exp(10 mean ln f) is the factor by which the decay
alone weighs a key 10 tokens back against the current one.

Usage: PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 docs/length/ablation-fox/fox_gates.py MODEL_DIR \\
           [TEXT (default ../shared/data/wikitext-2/wiki.test.tokens)]
"""
import json
import struct
import sys

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__.strip())

import numpy as np  # noqa: E402 (after the usage check, so that it prints without the module)

import posemb  # noqa: E402

def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=np.float32).reshape(v['shape'])
    return out
d = sys.argv[1]
W = load(d + '/model.safetensors')
llama = 'model.embed_tokens.weight' in W
text = open(sys.argv[2] if len(sys.argv) == 3 else '../shared/data/wikitext-2/wiki.test.tokens', 'rb').read()
m = posemb.Model(d); T = 128
for l in range(4):
    lf = []
    for w in range(8):
        out = m.forward([list(text[w * T:(w + 1) * T])])
        h = out['hidden_states'][l][0].astype(np.float64)
        if llama:
            x = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * W[f'model.layers.{l}.input_layernorm.weight']
            pre = f'model.layers.{l}.self_attn.fox.forget.'
        else:
            mu = h.mean(-1, keepdims=True); var = ((h - mu) ** 2).mean(-1, keepdims=True)
            x = (h - mu) / np.sqrt(var + 1e-5) * W[f'transformer.h.{l}.ln_1.weight'] + W[f'transformer.h.{l}.ln_1.bias']
            pre = f'transformer.h.{l}.attn.fox.forget.'
        z = x @ W[pre + 'weight'].T + W[pre + 'bias']
        lf.append(-np.log1p(np.exp(-z)))  # ln sigmoid
    lf = np.concatenate(lf)
    print(f"layer {l}: bias {np.round(W[pre + 'bias'], 2)}; mean f per head {np.round(np.exp(lf).mean(0), 3)}; "
          f"mean ln f {np.round(lf.mean(0), 2)} (10 tokens back: x{np.round(np.exp(10 * lf.mean(0)), 4)})")
