"""FoX's forget gates in a trained decoder of the length study (GPT-2 or Llama): per layer, the learned bias and,
over 8 windows of 128 bytes of WikiText-2's test set, each head's mean gate f = sigmoid(w . x + b) and mean ln f,
with x the layer's normalised input (ln_1 for GPT-2, the input RMSNorm for Llama) recomputed from the model's
hidden states (Model.forward), as src/pe/fox.c defines it. 10 x mean ln f is the log of the factor by which the
decay typically weighs a key 10 tokens back against the current one (per token the gates spread around the mean).

As a check of the recomputation, each layer's attention is rebuilt from the gates (q.k / sqrt(d) + C_i - C_j,
C the running sum of ln f, causal softmax) and compared with Model.forward's attentions: the largest difference
is printed.

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

T, WINDOWS = 128, 8


def load(path):
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    out = {}
    for k, v in json.loads(b[8:8 + n]).items():
        if k != '__metadata__':
            s, e = v['data_offsets']
            out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=np.float32).reshape(v['shape'])
    return out


class Layer:
    """One layer's normalisation, q/k projection and forget gate, GPT-2's or Llama's names and forms."""

    def __init__(self, W, cfg, l):
        self.llama = cfg.get('model_type') == 'llama'
        if self.llama:
            p = f'model.layers.{l}.'
            self.eps, self.norm_w = cfg['rms_norm_eps'], W[p + 'input_layernorm.weight']
            self.wq, self.wk = W[p + 'self_attn.q_proj.weight'].T, W[p + 'self_attn.k_proj.weight'].T
            self.bq = self.bk = 0.0
            self.fw, self.fb = W[p + 'self_attn.fox.forget.weight'], W[p + 'self_attn.fox.forget.bias']
        else:
            p, D = f'transformer.h.{l}.', cfg['n_embd']
            self.eps, self.norm_w, self.norm_b = cfg['layer_norm_epsilon'], W[p + 'ln_1.weight'], W[p + 'ln_1.bias']
            w, b = W[p + 'attn.c_attn.weight'], W[p + 'attn.c_attn.bias']
            self.wq, self.wk, self.bq, self.bk = w[:, :D], w[:, D:2 * D], b[:D], b[D:2 * D]
            self.fw, self.fb = W[p + 'attn.fox.forget.weight'], W[p + 'attn.fox.forget.bias']

    def normed(self, h):
        if self.llama:
            return h / np.sqrt((h * h).mean(-1, keepdims=True) + self.eps) * self.norm_w
        mu = h.mean(-1, keepdims=True)
        return (h - mu) / np.sqrt(((h - mu) ** 2).mean(-1, keepdims=True) + self.eps) * self.norm_w + self.norm_b

    def ln_f(self, x):  # [T, H]
        return -np.log1p(np.exp(-(x @ self.fw.T + self.fb)))

    def attention(self, x, lf, H):  # [H, T, T], rebuilt
        q, k = x @ self.wq + self.bq, x @ self.wk + self.bk
        d, C, n = q.shape[1] // H, np.cumsum(lf, 0), len(x)
        out = np.empty((H, n, n))
        for h in range(H):
            s = q[:, h * d:(h + 1) * d] @ k[:, h * d:(h + 1) * d].T / np.sqrt(d) + C[:, h, None] - C[None, :, h]
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
            p = np.exp(s - s.max(1, keepdims=True))
            out[h] = p / p.sum(1, keepdims=True)
        return out


def main():
    d = sys.argv[1]
    W, cfg = load(d + '/model.safetensors'), json.load(open(d + '/config.json'))
    L = cfg.get('num_hidden_layers', cfg.get('n_layer'))
    H = cfg.get('num_attention_heads', cfg.get('n_head'))
    text = open(sys.argv[2] if len(sys.argv) == 3 else '../shared/data/wikitext-2/wiki.test.tokens', 'rb').read()
    m, layers = posemb.Model(d), [Layer(W, cfg, l) for l in range(L)]
    lfs, worst = [[] for _ in range(L)], 0.0
    for w in range(WINDOWS):
        out = m.forward([list(text[w * T:(w + 1) * T])])
        for l, layer in enumerate(layers):
            x = layer.normed(out['hidden_states'][l][0].astype(np.float64))
            lfs[l].append(layer.ln_f(x))
            if w == 0:
                worst = max(worst, np.abs(layer.attention(x, lfs[l][-1], H) - out['attentions'][l][0]).max())
    for l, layer in enumerate(layers):
        lf = np.concatenate(lfs[l])
        print(f"layer {l}: bias {np.round(layer.fb, 2)}; mean f per head {np.round(np.exp(lf).mean(0), 3)}; "
              f"mean ln f {np.round(lf.mean(0), 2)}; 10 x mean ln f {np.round(10 * lf.mean(0), 1)}")
    print(f"attention rebuilt from the gates against Model.forward's, first window: max difference {worst:.1e}")


main()
