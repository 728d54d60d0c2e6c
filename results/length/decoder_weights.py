"""A length-study decoder's weights read for the measurement scripts of results/length (cope_counts.py,
ablation-fox/fox_gates.py): the safetensors file, the config, and per layer the normalised input and the q and k
projections as src/model/decoder.c (GPT-2: ln_1, c_attn) and src/model/llama.c (input RMSNorm, q_proj, k_proj)
compute them, from the hidden states Model.forward returns. numpy only."""
import json
import struct

import numpy as np


def load(path):
    """name -> float32 array of a safetensors file."""
    b = open(path, 'rb').read()
    n = struct.unpack('<Q', b[:8])[0]
    out = {}
    for k, v in json.loads(b[8:8 + n]).items():
        if k != '__metadata__':
            s, e = v['data_offsets']
            out[k] = np.frombuffer(b[8 + n + s:8 + n + e], dtype=np.float32).reshape(v['shape'])
    return out


class Decoder:
    """A model folder's weights and sizes: W (name -> array), cfg, layers L, heads H, head width d."""

    def __init__(self, model_dir):
        self.W, self.cfg = load(model_dir + '/model.safetensors'), json.load(open(model_dir + '/config.json'))
        self.llama = self.cfg.get('model_type') == 'llama'
        self.L = self.cfg.get('num_hidden_layers', self.cfg.get('n_layer'))
        self.H = self.cfg.get('num_attention_heads', self.cfg.get('n_head'))
        self.layers = [Layer(self, l) for l in range(self.L)]
        self.d = self.layers[0].wq.shape[1] // self.H


class Layer:
    """One layer's normalisation and q/k projections; attn(name) is one of its attention's own tensors."""

    def __init__(self, m, l):
        W, cfg, self.llama = m.W, m.cfg, m.llama
        if self.llama:
            self.prefix = f'model.layers.{l}.self_attn.'
            self.eps, self.norm_w = cfg['rms_norm_eps'], W[f'model.layers.{l}.input_layernorm.weight']
            self.wq, self.wk = W[self.prefix + 'q_proj.weight'].T, W[self.prefix + 'k_proj.weight'].T
            self.bq = self.bk = 0.0
        else:
            p, D = f'transformer.h.{l}.', cfg['n_embd']
            self.prefix = p + 'attn.'
            self.eps, self.norm_w, self.norm_b = cfg['layer_norm_epsilon'], W[p + 'ln_1.weight'], W[p + 'ln_1.bias']
            w, b = W[p + 'attn.c_attn.weight'], W[p + 'attn.c_attn.bias']
            self.wq, self.wk, self.bq, self.bk = w[:, :D], w[:, D:2 * D], b[:D], b[D:2 * D]
        self.W = W

    def attn(self, name):
        return self.W[self.prefix + name]

    def normed(self, h):
        """The layer's input as its attention reads it, from hidden state h [T, D] (float64)."""
        if self.llama:
            return h / np.sqrt((h * h).mean(-1, keepdims=True) + self.eps) * self.norm_w
        mu = h.mean(-1, keepdims=True)
        return (h - mu) / np.sqrt(((h - mu) ** 2).mean(-1, keepdims=True) + self.eps) * self.norm_w + self.norm_b

    def qk(self, x):
        """q, k [T, H * d] of the normalised input x."""
        return x @ self.wq + self.bq, x @ self.wk + self.bk
