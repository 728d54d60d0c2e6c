"""How far CoPE's counts reach before the clamp (npos - 1 = 63) in a Llama CoPE model of the length study, on
consecutive windows of WikiText-2's test bytes, per layer: the gates sigmoid(q.k / sqrt(d)) and counts
p_ij = sum_{t=j..i} g_it recomputed from the model's hidden states (Model.forward) and weights (q, k of each
layer from its input RMSNorm), as src/pe/cope.c defines them.

Usage (the Python module's Model builds the model at its config's max_position_embeddings, so for T past
the training length use a copy of the folder whose config.json says T; CoPE has no table of positions):
    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 docs/length/cope_counts.py MODEL_DIR T WINDOWS \\
        [TEXT (default ../shared/data/wikitext-2/wiki.test.tokens)]
"""
import json
import struct
import sys

if len(sys.argv) not in (4, 5):
    sys.exit(__doc__.strip())

import numpy as np  # noqa: E402 (after the usage check, so that it prints without the module)

import posemb  # noqa: E402

def load(p):
    b = open(p, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n]); out = {}
    for k, v in h.items():
        if k == '__metadata__': continue
        s, e = v['data_offsets']; out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=np.float32).reshape(v['shape'])
    return out

model_dir, T, windows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text_path = sys.argv[4] if len(sys.argv) == 5 else '../shared/data/wikitext-2/wiki.test.tokens'
W = load(model_dir + '/model.safetensors')
text = open(text_path, 'rb').read()
m = posemb.Model(model_dir)
H, d, P = 4, 32, 64
clamped = np.zeros(4); gate = np.zeros(4); reach = [[] for _ in range(4)]
for w in range(windows):
    ids = list(text[w * T:(w + 1) * T])
    out = m.forward([ids])
    for l in range(4):
        h = out['hidden_states'][l][0].astype(np.float64)
        x = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-6) * W[f'model.layers.{l}.input_layernorm.weight']
        q = x @ W[f'model.layers.{l}.self_attn.q_proj.weight'].T; k = x @ W[f'model.layers.{l}.self_attn.k_proj.weight'].T
        for hd in range(H):
            s = q[:, hd * d:(hd + 1) * d] @ k[:, hd * d:(hd + 1) * d].T / np.sqrt(d)
            g = np.tril(1 / (1 + np.exp(-s)))
            cnt = np.cumsum(g[:, ::-1], axis=1)[:, ::-1]  # p_ij = sum_{t=j..i} g_it
            mask = np.tril(np.ones((T, T), bool))
            gate[l] += g[mask].mean() / (H * windows)
            clamped[l] += ((cnt >= P - 1) & mask).sum() / mask.sum() / (H * windows)
            # per query: how many keys back the count stays below the clamp
            below = ((cnt < P - 1) & mask).sum(1)
            reach[l].append(below[T // 2:].mean())  # queries in the window's second half
for l in range(4):
    print(f"T {T} layer {l}: mean gate {gate[l]:.3f}; share of (query, key) pairs at the clamp {clamped[l]:.3f}; "
          f"keys back before the clamp (queries past T/2) {np.mean(reach[l]):.1f}")
