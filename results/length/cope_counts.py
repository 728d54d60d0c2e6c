"""How far CoPE's counts reach before the clamp (npos - 1 = 63) in a CoPE model of the length study (GPT-2 or
Llama), on consecutive windows of WikiText-2's test bytes, per layer: the gates sigmoid(q.k / sqrt(d)) and counts
p_ij = sum_{t=j..i} g_it recomputed from the model's hidden states (Model.forward) and weights (q, k of each
layer from its normalised input, decoder_weights.py), as src/pe/cope.c defines them.

Usage (the Python module's Model builds the model at its config's max_position_embeddings, so for T past
the training length use a copy of the folder whose config.json says T; CoPE has no table of positions):
    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 results/length/cope_counts.py MODEL_DIR T WINDOWS \\
        [TEXT (default ../shared/data/wikitext-2/wiki.test.tokens)]
"""
import os
import sys

if len(sys.argv) not in (4, 5):
    sys.exit(__doc__.strip())

import numpy as np  # noqa: E402 (after the usage check, so that it prints without the module)

import posemb  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from decoder_weights import Decoder  # noqa: E402

model_dir, T, windows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
text = open(sys.argv[4] if len(sys.argv) == 5 else '../shared/data/wikitext-2/wiki.test.tokens', 'rb').read()
dec, m = Decoder(model_dir), posemb.Model(model_dir)
H, d, P = dec.H, dec.d, dec.layers[0].attn('cope.pos_emb').shape[0]
mask = np.tril(np.ones((T, T), bool))
clamped, gate, reach = np.zeros(dec.L), np.zeros(dec.L), [[] for _ in range(dec.L)]
for w in range(windows):
    out = m.forward([list(text[w * T:(w + 1) * T])])
    for l, layer in enumerate(dec.layers):
        q, k = layer.qk(layer.normed(out['hidden_states'][l][0].astype(np.float64)))
        for hd in range(H):
            s = q[:, hd * d:(hd + 1) * d] @ k[:, hd * d:(hd + 1) * d].T / np.sqrt(d)
            g = np.tril(1 / (1 + np.exp(-s)))
            cnt = np.cumsum(g[:, ::-1], axis=1)[:, ::-1]  # p_ij = sum_{t=j..i} g_it
            gate[l] += g[mask].mean() / (H * windows)
            clamped[l] += ((cnt >= P - 1) & mask).sum() / mask.sum() / (H * windows)
            # per query: how many keys back the count stays below the clamp
            below = ((cnt < P - 1) & mask).sum(1)
            reach[l].append(below[T // 2:].mean())  # queries in the window's second half
for l in range(dec.L):
    print(f"T {T} layer {l}: mean gate {gate[l]:.3f}; share of (query, key) pairs at the clamp {clamped[l]:.3f}; "
          f"keys back before the clamp (queries past T/2) {np.mean(reach[l]):.1f}")
