"""PyTorch peer of bench/train_mini.c's Llama sizes (train-llama, train-llama-tiny):
the same causal-LM training step on the same model, written in plain PyTorch as
Hugging Face's LlamaForCausalLM computes it (src/model/llama.c is posemb's):

  h = E[ids];  h = h + o(attn(RMSNorm(h)));  h = h + down(silu(gate(x)) * up(x)), x = RMSNorm(h)
  logits = lm_head(RMSNorm(h)), an untied lm_head, no biases anywhere

with grouped-query attention (each key/value head serves H/KV query heads, HF's
repeat_kv), RoPE in HF's rotate_half convention (pairs (m, m + d/2),
theta_m = 10000^(-2m/d)), RMSNorm in float32 (eps 1e-6), HF's initialisation
(N(0, 0.02) for every matrix, RMSNorm's weights 1), the loss on every token but
the last of each sequence (HF's shift: the lm_head runs on those rows only, as in
posemb). torch.optim.AdamW with the same learning-rate schedule, clipping at norm 1
and weight decay (0.01 on the matrices, not on RMSNorm's weights) as posemb's AdamW.
Prints one JSON line with the fields of torch_train_mini.py. With
POSEMB_BENCH_DUMP=DIR it starts from the weights (by their HF names) and the batch
that bench_train_mini wrote there (bench/run --same-init).

PEs: rope (Llama's own), none, ape (a learned table added to the embeddings, as
posemb's input hook) and alibi (BLOOM's slopes, -m_h (i - j) on the logits).

Written as fast as PyTorch allows here: q, k, v one product and gate, up one
product (posemb fuses them too; the checkpoint's tensors are concatenated on
load); attention through PyTorch's fused scaled_dot_product_attention with
is_causal=True (PyTorch 2's F.scaled_dot_product_attention, 1.13's
F._scaled_dot_product_attention), k and v repeated to the query heads as HF does,
for the PEs without a bias. ALiBi needs a float bias, which 1.13's fused
attention does not take: it runs the explicit form, one product per key/value
head for its whole group of query heads (no repeat), the bias and the causal
mask added in place. POSEMB_TORCH_ATTN=explicit runs the explicit form for every
PE (bench/torch_tune's "attn=explicit" setting times the two).
usage: torch_llama.py PE SIZE THREADS STEPS [bf16]

bf16: the forward and the loss under torch.autocast("cpu", torch.bfloat16), as
torch_train_mini.py."""
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in bench/
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import torch_bert as tb  # noqa: E402

PES = ("none", "ape", "rope", "alibi")
EPS = 1e-6  # Llama's rms_norm_eps (posemb_config_defaults)

# layers, hidden, heads, kv_heads, inter, vocab, max_position, batch, len, lr, warmup, total: bench/sizes.h
SIZES = {
    "train-llama": (4, 256, 8, 2, 688, 32000, 128, 16, 128, 1e-4, 0, 1000000),
    "train-llama-tiny": (2, 64, 4, 2, 172, 1000, 64, 16, 64, 1e-4, 0, 1000000),
}

# PyTorch 2's public fused attention, or 1.13's private one (same arguments, a tuple back)
if hasattr(F, "scaled_dot_product_attention"):
    def sdpa_causal(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
elif hasattr(F, "_scaled_dot_product_attention"):
    def sdpa_causal(q, k, v):
        return F._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]
else:
    sdpa_causal = None


class RMSNorm(nn.Module):
    """HF's LlamaRMSNorm: in float32 whatever the input, back to the input's type before the weight."""

    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS)
        return self.weight * x.to(dtype)


def repeat_kv(x, groups):
    """HF's repeat_kv: [B, KV, T, d] -> [B, KV * groups, T, d], query head h reading key/value head h // groups."""
    if groups == 1:
        return x
    B, KV, T, d = x.shape
    return x[:, :, None].expand(B, KV, groups, T, d).reshape(B, KV * groups, T, d)


class Layer(nn.Module):
    def __init__(self, d, h, kv, inter):
        super().__init__()
        self.h, self.kv, self.dh, self.inter = h, kv, d // h, inter
        self.qkv = nn.Linear(d, d + 2 * kv * self.dh, bias=False)  # q_proj, k_proj, v_proj fused
        self.o = nn.Linear(d, d, bias=False)
        self.gate_up = nn.Linear(d, 2 * inter, bias=False)           # gate_proj, up_proj fused
        self.down = nn.Linear(inter, d, bias=False)
        self.ln1, self.ln2 = RMSNorm(d), RMSNorm(d)

    def attention(self, q, k, v, ctx):
        """q [B, H, T, d], k and v [B, KV, T, d] -> [B, H, T, d], causal."""
        if "bias" not in ctx and sdpa_causal is not None and not ctx["explicit"]:
            g = self.h // self.kv
            return sdpa_causal(q, repeat_kv(k, g), repeat_kv(v, g))
        # explicit: a key/value head's group of query heads as one [g T, d] block, so k and v are read, not copied
        B, H, T, d = q.shape
        q = (q * (1.0 / math.sqrt(d))).reshape(B, self.kv, H // self.kv * T, d)
        s = torch.matmul(q, k.transpose(-1, -2))  # matmul keeps q, k, not s: the bias adds in place
        s.add_(ctx.get("bias", ctx["mask"]))
        return torch.matmul(torch.softmax(s, -1), v).view(B, H, T, d)

    def forward(self, x, ctx):
        B, T, D = x.shape
        kvd = self.kv * self.dh
        q, k, v = self.qkv(self.ln1(x)).split((D, kvd, kvd), -1)
        q = q.view(B, T, self.h, self.dh).transpose(1, 2)
        k = k.view(B, T, self.kv, self.dh).transpose(1, 2)
        v = v.view(B, T, self.kv, self.dh).transpose(1, 2)
        if "cos" in ctx:  # in q's type, as HF's rotary embedding returns them (bf16 under autocast)
            cos, sin = ctx["cos"].to(q.dtype), ctx["sin"].to(q.dtype)
            q, k = q * cos + tb.rotate_half(q) * sin, k * cos + tb.rotate_half(k) * sin
        z = self.attention(q, k, v, ctx).transpose(1, 2).reshape(B, T, D)
        x = x + self.o(z)
        gate, up = self.gate_up(self.ln2(x)).split(self.inter, -1)
        return x + self.down(F.silu(gate) * up)


class Llama(nn.Module):
    """LlamaForCausalLM at the given sizes, with PE pe."""

    def __init__(self, layers, d, h, kv, inter, vocab, max_position, pe):
        super().__init__()
        if pe not in PES:
            raise ValueError(f"no PyTorch peer for PE '{pe}' on a Llama (one of {', '.join(PES)})")
        self.pe, self.h, self.kv, self.dh, self.max_position = pe, h, kv, d // h, max_position
        self.explicit = os.environ.get("POSEMB_TORCH_ATTN") == "explicit"
        self.embed = nn.Embedding(vocab, d)
        if pe == "ape":
            self.pos = nn.Embedding(max_position, d)
        self.layers = nn.ModuleList(Layer(d, h, kv, inter) for _ in range(layers))
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)  # untied, as Llama 2
        self._ctx = {}
        for m in self.modules():  # HF's _init_weights, as posemb_model_init: N(0, initializer_range)
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)

    def context(self, T):
        """What the layers need for length T and does not depend on parameters, built once per length."""
        if T in self._ctx:
            return self._ctx[T]
        ctx, pos, g = {"explicit": self.explicit}, torch.arange(T), self.h // self.kv
        rel = pos[:, None] - pos[None, :]  # i - j, >= 0 where a query may look
        mask = torch.zeros(T, T).masked_fill_(rel < 0, float("-inf"))
        ctx["mask"] = mask.repeat(g, 1)  # the explicit form's: a group's g query heads one after the other
        if self.pe == "rope":  # HF's rotary table: the angles in double as posemb's, cos and sin repeated over halves
            a = pos.double()[:, None] * tb.sinusoid_freqs(self.dh).double()[None, :]
            ctx["cos"], ctx["sin"] = torch.cos(a).float().repeat(1, 2), torch.sin(a).float().repeat(1, 2)
        if self.pe == "alibi":  # [H, T, T], the mask in it, laid out as the explicit form's [KV, g T, T]
            bias = -tb.alibi_slopes(self.h)[:, None, None] * rel.float() + mask
            ctx["bias"] = bias.reshape(self.kv, g * T, T)
        self._ctx[T] = ctx
        return ctx

    def forward(self, ids):
        """The last hidden state [B, T, D], after the final RMSNorm."""
        T = ids.shape[1]
        if T > self.max_position:
            raise ValueError(f"{T} tokens, {self.max_position} positions")
        ctx = self.context(T)
        x = self.embed(ids)
        if self.pe == "ape":
            x = x + self.pos.weight[:T]
        for layer in self.layers:
            x = layer(x, ctx)
        return self.norm(x)

    def loss(self, h, ids):
        """HF's causal-LM loss: position t predicts token t + 1; the lm_head on the predicting rows only."""
        logits = self.lm_head(h[:, :-1]).float()  # HF's logits.float(): the loss in float32 under autocast
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))

    def n_params(self):
        return sum(p.numel() for p in self.parameters())


def load_posemb(model, path):
    """Copies posemb's Llama checkpoint (HF's LlamaForCausalLM names) into model: q, k, v into the fused qkv,
    gate and up into gate_up; every parameter must come from it and every tensor must land, or this raises."""
    dst = dict(model.named_parameters())
    layer_names = {"input_layernorm": "ln1", "post_attention_layernorm": "ln2", "self_attn.o_proj": "o",
                   "mlp.down_proj": "down"}
    fused = {"self_attn.q_proj": ("qkv", 0), "self_attn.k_proj": ("qkv", 1), "self_attn.v_proj": ("qkv", 2),
             "mlp.gate_proj": ("gate_up", 0), "mlp.up_proj": ("gate_up", 1)}
    model_names = {"model.embed_tokens.weight": "embed.weight", "model.norm.weight": "norm.weight",
                   "lm_head.weight": "lm_head.weight", "model.pe.position_embeddings.weight": "pos.weight"}
    values, parts = {}, {}
    for name, t in tb.read_safetensors(path).items():
        target = model_names.get(name)
        if name.startswith("model.layers."):
            l, rest = name[len("model.layers."):].split(".", 1)
            what, kind = rest.rsplit(".", 1)
            if what in fused and kind == "weight":
                into, i = fused[what]
                parts.setdefault(f"layers.{l}.{into}.weight", {})[i] = t
                continue
            if what in layer_names and kind == "weight":
                target = f"layers.{l}.{layer_names[what]}.weight"
        if target not in dst:
            raise ValueError(f"{path}: no parameter here for {name}")
        values[target] = t
    for target, p in parts.items():
        values[target] = torch.cat([p[i] for i in sorted(p)])
    missing = sorted(set(dst) - set(values))
    if missing:
        raise ValueError(f"{path}: no tensor for {', '.join(missing)}")
    with torch.no_grad():
        for target, t in values.items():
            if dst[target].shape != t.shape:
                raise ValueError(f"{path}: {target} is {list(dst[target].shape)}, the checkpoint's {list(t.shape)}")
            dst[target].copy_(t)


def llama_flops(layers, d, h, kv, inter, B, T):
    """bench_llama_flops (bench/bench_common.h): the layers' dense and attention products of one forward."""
    tokens, kvd = B * T, kv * (d // h)
    return 2 * tokens * layers * (2 * d * d + 2 * d * kvd + 3 * d * inter) + 4 * B * T * T * d * layers


def attention_path(model):
    """Which attention form the layers ran, for the JSON line."""
    return "explicit" if model.explicit or model.pe == "alibi" or sdpa_causal is None else "sdpa"


def main():
    pe, size, threads, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    bf16 = len(sys.argv) > 5 and sys.argv[5] == "bf16"
    L, d, h, kv, inter, vocab, max_pos, B, T, lr, warmup, total = SIZES[size]
    tb.set_threads(threads)
    torch.manual_seed(0)
    model = Llama(L, d, h, kv, inter, vocab, max_pos, pe)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(vocab // 4, vocab, (B, T), generator=g)  # a fixed batch
    if tb.dump_dir():  # bench/run --same-init: posemb's initial weights and batch (ids; MLM targets, labels unused)
        load_posemb(model, tb.dump_dir() + "/model.safetensors")
        ids = tb.read_batch(tb.dump_dir() + "/batch.bin", [B * T, B * T, B])[0].view(B, T)
    head_flops = 2 * B * (T - 1) * d * vocab
    timed = tb.time_training(model, lambda h: model.loss(h, ids), ids, lr, warmup, total, steps, bf16)
    print(tb.train_result(size, pe, threads, bf16, B * T, llama_flops(L, d, h, kv, inter, B, T) + head_flops, timed,
                          steps, model, attention=attention_path(model)))

if __name__ == "__main__":
    main()
