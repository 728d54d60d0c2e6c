"""FoX's forget gates in a trained decoder of the length study (GPT-2 or Llama): per layer, the learned bias and,
over 8 windows of 128 bytes of WikiText-2's test set, each head's mean gate f = sigmoid(w . x + b) and mean ln f,
with x the layer's normalised input (ln_1 for GPT-2, the input RMSNorm for Llama) recomputed from the model's
hidden states (Model.forward), as src/pe/fox.c defines it. 10 x mean ln f is the log of the factor by which the
decay typically weighs a key 10 tokens back against the current one (per token the gates spread around the mean).

As a check of the recomputation, each layer's attention is rebuilt from the gates (q.k / sqrt(d) + C_i - C_j,
C the running sum of ln f, causal softmax) and compared with Model.forward's attentions: the largest difference
is printed.

Usage: PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 results/length/ablation-fox/fox_gates.py MODEL_DIR \\
           [TEXT (default ../shared/data/wikitext-2/wiki.test.tokens)]
"""
import os
import sys

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__.strip())

import numpy as np  # noqa: E402 (after the usage check, so that it prints without the module)

import posemb  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from decoder_weights import Decoder  # noqa: E402

T, WINDOWS = 128, 8


def ln_f(layer, x):  # [T, H]: ln sigmoid(w . x + b)
    return -np.log1p(np.exp(-(x @ layer.attn('fox.forget.weight').T + layer.attn('fox.forget.bias'))))


def rebuilt_attention(layer, x, lf, H):  # [H, T, T]: causal softmax of q.k / sqrt(d) + C_i - C_j
    q, k = layer.qk(x)
    d, C, n = q.shape[1] // H, np.cumsum(lf, 0), len(x)
    out = np.empty((H, n, n))
    for h in range(H):
        s = q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T / np.sqrt(d) + C[:, h, None] - C[None, :, h]
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
        p = np.exp(s - s.max(1, keepdims=True))
        out[h] = p / p.sum(1, keepdims=True)
    return out


def main():
    dec, m = Decoder(sys.argv[1]), posemb.Model(sys.argv[1])
    text = open(sys.argv[2] if len(sys.argv) == 3 else '../shared/data/wikitext-2/wiki.test.tokens', 'rb').read()
    lfs, worst = [[] for _ in range(dec.L)], 0.0
    for w in range(WINDOWS):
        out = m.forward([list(text[w * T:(w + 1) * T])])
        for l, layer in enumerate(dec.layers):
            x = layer.normed(out['hidden_states'][l][0].astype(np.float64))
            lfs[l].append(ln_f(layer, x))
            if w == 0:
                worst = max(worst, np.abs(rebuilt_attention(layer, x, lfs[l][-1], dec.H) - out['attentions'][l][0]).max())
    for l, layer in enumerate(dec.layers):
        lf = np.concatenate(lfs[l])
        print(f"layer {l}: bias {np.round(layer.attn('fox.forget.bias'), 2)}; mean f per head "
              f"{np.round(np.exp(lf).mean(0), 3)}; mean ln f {np.round(lf.mean(0), 2)}; "
              f"10 x mean ln f {np.round(10 * lf.mean(0), 1)}")
    print(f"attention rebuilt from the gates against Model.forward's, first window: max difference {worst:.1e}")


main()
