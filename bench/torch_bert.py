"""posemb's BERT encoder (post-LN) and its position embeddings in PyTorch,
for the peers of bench/train_mini.c and bench/forward_base.c.

Every PE computes what src/pe/*.c computes (docs/pe.md), initialised the same
way, so that both engines train the same function from the same init scheme:

  none   nothing
  ape    learned table, max_position x D, N(0, 0.02)
  sin    P_x[2m] = sin(w_m x), P_x[2m+1] = cos(w_m x), w_m = 10000^(-2m/D)
  lsin   sin with D/2 learned frequencies, initialised to sin's
  rpe    Shaw: e_ij = q_i.(k_j + aK[r])/sqrt(d), z_i = sum_j p_ij (v_j + aV[r]),
         r = clip(j - i, -64, 64); aK, aV per layer, N(0, 0.02)
  srpe   rpe with aK = aV = the interleaved sinusoid of r, width d, w_m = 10000^(-2m/d)
  lsrpe  srpe with d/2 learned frequencies per layer
  rope   q, k rotated per head by pos * theta_m, theta_m = 10000^(-2m/d), pairs (m, m + d/2)
  alibi  -m_h |i - j| on the logits, BLOOM's slopes
  t5     a learned scalar per (bucket(j - i), head), shared by the layers, 32
         buckets, max distance 128, bidirectional, HF T5's buckets, N(0, D^-0.5)

Written as well as PyTorch allows on a CPU: one fused QKV product, relative
tables in the efficient form (q.aK^T gathered by distance; probabilities
summed per distance, then times aV; only the table rows a length can read),
biases and rotations computed once per forward, never a Python loop over
tokens."""
import json
import math
import os
import re
import resource
import struct
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

PES = ("none", "ape", "sin", "lsin", "rpe", "srpe", "lsrpe", "rope", "alibi", "t5")
SHAW = ("rpe", "srpe", "lsrpe")
CLIP = 64                            # rpe, srpe, lsrpe: k
BASE = 10000.0                       # sin, lsin, srpe, lsrpe, rope
T5_BUCKETS, T5_MAX_DISTANCE = 32, 128


def sinusoid_freqs(width, base=BASE):
    """w_m = base^(-2m/width), computed in double and rounded to float (pe_sinusoid_freqs)."""
    return torch.tensor([base ** (-2.0 * m / width) for m in range(width // 2)], dtype=torch.float64).float()


def sinusoid_table(freq, x):
    """Rows x: [sin(w_0 x), cos(w_0 x), sin(w_1 x), ...] (the interleaved layout)."""
    a = x[:, None] * freq[None, :]
    return torch.stack((torch.sin(a), torch.cos(a)), -1).flatten(-2)


def fixed_sinusoid_table(width, x0, rows):
    """A fixed table, angles in double as pe_sinusoid_table computes them."""
    x = torch.arange(x0, x0 + rows, dtype=torch.float64)
    return sinusoid_table(sinusoid_freqs(width).double(), x).float()


def alibi_slopes(H):
    """posemb_pe_alibi_slopes: 2^(-8h/P) for the largest power of two P <= H, then the odd powers of 2^(-4/P)."""
    p = 1
    while p * 2 <= H:
        p *= 2
    base, extra = 2.0 ** (-8.0 / p), 2.0 ** (-4.0 / p)
    return torch.tensor([base ** (h + 1) for h in range(p)] + [extra ** (2 * h + 1) for h in range(H - p)])


def t5_bucket(relative_position, bidirectional=True, num_buckets=T5_BUCKETS, max_distance=T5_MAX_DISTANCE):
    """HF transformers' T5Attention._relative_position_bucket, relative_position = j - i."""
    relative_buckets = 0
    if bidirectional:
        num_buckets //= 2
        relative_buckets += (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
    else:
        relative_position = -torch.min(relative_position, torch.zeros_like(relative_position))
    max_exact = num_buckets // 2
    is_small = relative_position < max_exact
    relative_position_if_large = max_exact + (
        torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact) * (num_buckets - max_exact)
    ).to(torch.long)
    relative_position_if_large = torch.min(relative_position_if_large,
                                           torch.full_like(relative_position_if_large, num_buckets - 1))
    relative_buckets += torch.where(is_small, relative_position, relative_position_if_large)
    return relative_buckets


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), -1)


class Layer(nn.Module):
    def __init__(self, d, h, inter, pe, eps):
        super().__init__()
        self.h, self.dh, self.pe = h, d // h, pe
        self.qkv = nn.Linear(d, 3 * d)       # q, k, v fused
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.fi, self.fo = nn.Linear(d, inter), nn.Linear(inter, d)
        if pe == "rpe":
            self.ak = nn.Parameter(torch.empty(2 * CLIP + 1, self.dh))
            self.av = nn.Parameter(torch.empty(2 * CLIP + 1, self.dh))
        if pe == "lsrpe":
            self.rel_freq = nn.Parameter(sinusoid_freqs(self.dh))

    def rel_tables(self, ctx):
        """aK, aV: the rows of distances -kk..kk that this length reads."""
        kk = ctx["kk"]
        if self.pe == "rpe":
            return self.ak[CLIP - kk:CLIP + kk + 1], self.av[CLIP - kk:CLIP + kk + 1]
        if self.pe == "srpe":
            return ctx["rel_table"], ctx["rel_table"]
        t = sinusoid_table(self.rel_freq, ctx["rel_x"])  # lsrpe: recomputed from the learned frequencies
        return t, t

    def forward(self, x, ctx):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)  # [B, H, T, d] each
        if self.pe == "rope":
            cos, sin = ctx["cos"], ctx["sin"]
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        q = q * (1.0 / math.sqrt(self.dh))   # the scale on q: every term below is a scaled logit
        s = torch.matmul(q, k.transpose(-1, -2))  # the terms below add in place: matmul keeps q, k, not s
        if self.pe in SHAW:
            ak, av = self.rel_tables(ctx)
            idx = ctx["rel_idx"].expand(B, self.h, T, T)
            s.add_(torch.gather(torch.matmul(q, ak.t()), -1, idx))  # q.aK^T gathered by distance
        if "bias" in ctx:
            s.add_(ctx["bias"])
        p = torch.softmax(s, -1)
        z = torch.matmul(p, v)
        if self.pe in SHAW:                  # probabilities summed per distance, then times aV
            w = torch.zeros(B, self.h, T, av.shape[0], dtype=p.dtype).scatter_add_(-1, idx, p)
            z = z + torch.matmul(w, av)
        z = z.transpose(1, 2).reshape(B, T, D)
        x = self.ln1(x + self.o(z))
        return self.ln2(x + self.fo(F.gelu(self.fi(x))))


class Bert(nn.Module):
    """cfg: layers, hidden, heads, inter, vocab, type_vocab, max_position; head: 'mlm', 'classify' or None."""

    def __init__(self, cfg, pe, head, eps=1e-12):
        super().__init__()
        if pe not in PES:
            raise ValueError(f"no PyTorch peer for PE '{pe}'")
        L, d, H = cfg["layers"], cfg["hidden"], cfg["heads"]
        self.pe, self.head, self.H, self.dh, self.max_position = pe, head, H, d // H, cfg["max_position"]
        self.we = nn.Embedding(cfg["vocab"], d)
        self.tt = nn.Embedding(cfg["type_vocab"], d)
        if pe == "ape":
            self.pos = nn.Embedding(cfg["max_position"], d)
        if pe == "sin":
            self.register_buffer("sin_table", fixed_sinusoid_table(d, 0, cfg["max_position"]))
        if pe == "lsin":
            self.freq = nn.Parameter(sinusoid_freqs(d))
        if pe == "srpe":
            self.register_buffer("rel_table", fixed_sinusoid_table(self.dh, -CLIP, 2 * CLIP + 1))
        if pe == "t5":
            self.t5_bias = nn.Parameter(torch.empty(T5_BUCKETS, H))
        self.ln = nn.LayerNorm(d, eps=eps)
        self.layers = nn.ModuleList(Layer(d, H, cfg["inter"], pe, eps) for _ in range(L))
        if head == "mlm":  # transform, then the decoder tied to the word embeddings
            self.tdense, self.tln = nn.Linear(d, d), nn.LayerNorm(d, eps=eps)
            self.mlm_bias = nn.Parameter(torch.zeros(cfg["vocab"]))
        else:              # HF (and posemb) build the pooler for the bare model and the classifier
            self.pool = nn.Linear(d, d)
        if head == "classify":
            self.cls = nn.Linear(d, 2)
        self._ctx = {}
        for m in self.modules():  # BERT's initialisation, as posemb_model_init
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)
        for layer in self.layers:
            if pe == "rpe":
                nn.init.normal_(layer.ak, std=0.02)
                nn.init.normal_(layer.av, std=0.02)
        if pe == "t5":  # HF T5: N(0, d_model^-0.5)
            nn.init.normal_(self.t5_bias, std=d ** -0.5)

    def context(self, T):
        """What the layers need for length T and does not depend on parameters, built once per length."""
        if T in self._ctx:
            return self._ctx[T]
        ctx, pos = {}, torch.arange(T)
        rel = pos[None, :] - pos[:, None]  # j - i
        if self.pe in SHAW:
            kk = min(CLIP, T - 1)
            ctx["kk"], ctx["rel_idx"] = kk, rel.clamp(-kk, kk) + kk
            ctx["rel_x"] = torch.arange(-kk, kk + 1, dtype=torch.float32)
        if self.pe == "rope":
            freq = sinusoid_freqs(self.dh).double()
            a = pos.double()[:, None] * freq[None, :]
            ctx["cos"], ctx["sin"] = torch.cos(a).float().repeat(1, 2), torch.sin(a).float().repeat(1, 2)
        if self.pe == "alibi":
            ctx["bias"] = -alibi_slopes(self.H)[:, None, None] * rel.abs()[None].float()
        if self.pe == "t5":
            ctx["bucket"] = t5_bucket(rel)
        self._ctx[T] = ctx
        return ctx

    def forward(self, ids):
        """The last hidden state [B, T, D]; token types all 0, positions 0..T-1."""
        B, T = ids.shape
        if T > self.max_position:
            raise ValueError(f"{T} tokens, {self.max_position} positions")
        ctx = dict(self.context(T))
        if self.pe == "srpe":
            ctx["rel_table"] = self.rel_table[CLIP - ctx["kk"]:CLIP + ctx["kk"] + 1]
        if self.pe == "t5":  # [H, T, T], shared by the layers
            ctx["bias"] = self.t5_bias[ctx["bucket"]].permute(2, 0, 1)
        x = self.we(ids) + self.tt.weight[0]
        if self.pe == "ape":
            x = x + self.pos.weight[:T]
        elif self.pe == "sin":
            x = x + self.sin_table[:T]
        elif self.pe == "lsin":
            x = x + sinusoid_table(self.freq, torch.arange(T, dtype=torch.float32))
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x, ctx)
        return x

    def mlm_loss(self, h, rows, targets):
        """The MLM head on the masked rows only, the decoder tied to the word embeddings."""
        h = h.reshape(-1, h.shape[-1])[rows]
        h = self.tln(F.gelu(self.tdense(h)).float())  # 1.13's CPU autocast leaves layer_norm's input in bf16
        return F.cross_entropy(torch.addmm(self.mlm_bias, h, self.we.weight.t()), targets)

    def classify_loss(self, h, labels):
        """BERT's classifier: pooler (dense, tanh) on the first token, then a linear layer."""
        return F.cross_entropy(self.cls(torch.tanh(self.pool(h[:, 0]))), labels)

    def n_params(self):
        return sum(p.numel() for p in self.parameters())


def read_safetensors(path):
    """{name: float32 tensor} from a safetensors file (the format is a length, a JSON header, the data)."""
    with open(path, "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: {name} is {t['dtype']}, not F32")
        a, b = t["data_offsets"]
        out[name] = torch.frombuffer(data[a:b], dtype=torch.float32).reshape(t["shape"]).clone()
    return out


# posemb's (Hugging Face's) tensor names -> this module's parameters; q, k, v go into the fused qkv
_LAYER_NAMES = {
    "attention.output.dense": "o", "attention.output.LayerNorm": "ln1", "intermediate.dense": "fi",
    "output.dense": "fo", "output.LayerNorm": "ln2",
}
_MODEL_NAMES = {
    "embeddings.word_embeddings.weight": "we.weight", "embeddings.token_type_embeddings.weight": "tt.weight",
    "embeddings.position_embeddings.weight": "pos.weight", "embeddings.position_frequencies": "freq",
    "embeddings.LayerNorm.weight": "ln.weight", "embeddings.LayerNorm.bias": "ln.bias",
    "encoder.relative_attention_bias.weight": "t5_bias",
    "pooler.dense.weight": "pool.weight", "pooler.dense.bias": "pool.bias",
    "cls.predictions.transform.dense.weight": "tdense.weight", "cls.predictions.transform.dense.bias": "tdense.bias",
    "cls.predictions.transform.LayerNorm.weight": "tln.weight", "cls.predictions.transform.LayerNorm.bias": "tln.bias",
    "cls.predictions.bias": "mlm_bias", "classifier.weight": "cls.weight", "classifier.bias": "cls.bias",
}


def load_posemb(model, path):
    """Copies the weights of a posemb checkpoint (model.safetensors, posemb_model_save) into model: every
    parameter of model must come from it, and every tensor of it must land, or this raises."""
    dst = dict(model.named_parameters())
    values, qkv = {}, {}
    for name, t in read_safetensors(path).items():
        name = re.sub(r"^bert\.", "", name)
        target = _MODEL_NAMES.get(name)
        m = re.match(r"encoder\.layer\.(\d+)\.(.*)\.(weight|bias|frequencies)$", name)
        if m:
            l, what, kind = m.groups()
            if what in ("attention.self.query", "attention.self.key", "attention.self.value"):
                qkv.setdefault(f"layers.{l}.qkv.{kind}", {})[what.rsplit(".", 1)[1]] = t
                continue
            if what == "attention.self.rpe" and kind == "frequencies":
                target = f"layers.{l}.rel_freq"
            elif what in ("attention.self.rpe.key", "attention.self.rpe.value") and kind == "weight":
                target = f"layers.{l}.{'ak' if what.endswith('key') else 'av'}"
            elif what in _LAYER_NAMES:
                target = f"layers.{l}.{_LAYER_NAMES[what]}.{kind}"
        if target not in dst:
            raise ValueError(f"{path}: no parameter here for {name}")
        values[target] = t
    for target, parts in qkv.items():
        values[target] = torch.cat([parts["query"], parts["key"], parts["value"]])
    missing = sorted(set(dst) - set(values))
    if missing:
        raise ValueError(f"{path}: no tensor for {', '.join(missing)}")
    with torch.no_grad():
        for target, t in values.items():
            if dst[target].shape != t.shape:
                raise ValueError(f"{path}: {target} is {list(dst[target].shape)}, the checkpoint's {list(t.shape)}")
            dst[target].copy_(t)


def read_batch(path, lengths):
    """The int32 arrays of batch.bin (bench_dump), of the given lengths, as int64 tensors."""
    with open(path, "rb") as f:
        flat = torch.frombuffer(bytearray(f.read()), dtype=torch.int32).long()
    if flat.numel() != sum(lengths):
        raise ValueError(f"{path}: {flat.numel()} numbers, {sum(lengths)} expected")
    return list(torch.split(flat, lengths))


def dump_dir():
    """POSEMB_BENCH_DUMP: the folder the posemb bench wrote its initial model and batch to (bench/run --same-init)."""
    d = os.environ.get("POSEMB_BENCH_DUMP")
    return d if d else None


def linear_schedule(warmup, total):
    """HF's get_linear_schedule_with_warmup, as posemb_lr_at."""
    def f(step):
        if step < warmup:
            return step / max(warmup, 1)
        if total <= warmup:
            return 1.0
        return max(0.0, (total - step) / (total - warmup))
    return f


def encoder_flops(layers, d, inter, B, T):
    """bench_encoder_flops (bench/bench_common.h): dense and attention products of one forward."""
    tokens = B * T
    return 2 * tokens * layers * (4 * d * d + 2 * d * inter) + 4 * B * T * T * d * layers


def set_threads(threads):
    """threads for the operators; one inter-op thread (one model, one stream of work)."""
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)


TUNING_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "LD_PRELOAD", "GLIBC_TUNABLES", "ATEN_CPU_CAPABILITY",
               "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "OPENBLAS_CORETYPE")


def tuning():
    """The settings in force that bench/torch_tune chooses among, for the JSON line."""
    tuned = {k: os.environ[k] for k in TUNING_VARS if os.environ.get(k)}
    m = re.search(r"CPU capability usage: (\S+)", torch.__config__.show())
    return {"torch_env": tuned, "cpu_capability": m.group(1) if m else None}


def sgemm_peak():
    """The best torch.mm rate on 1536^3 products, GFLOP/s, on the threads in force (bench_sgemm_peak)."""
    n = 1536
    a = torch.rand(n, n)
    peak = 0.0
    for _ in range(6):
        t0 = time.perf_counter()
        torch.mm(a, a)
        peak = max(peak, 2 * n ** 3 / (time.perf_counter() - t0) / 1e9)
    return peak


def max_rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def param_groups(model, weight_decay):
    """posemb's AdamW decays the matrices (weights, embeddings, lm_head, PE tables), not biases, norms, frequencies."""
    params = list(model.parameters())
    return [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]


def time_training(model, loss_fn, ids, lr, warmup, total, steps, bf16):
    """posemb's training step (AdamW with its groups and schedule, clipping at norm 1) on a fixed batch, steps
    timed after two warm-up steps; loss_fn maps the model's output to the loss. Returns the median step in ms,
    the first and the last loss, and the sgemm peak before and after (it moves with the host's load)."""
    opt = torch.optim.AdamW(param_groups(model, 0.01), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, linear_schedule(warmup, total))
    params = list(model.parameters())
    peak_before = sgemm_peak()
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(model(ids))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        sched.step()
        if i >= 2:
            times.append(1e3 * (time.perf_counter() - t0))
        if i == 0:
            loss0 = loss.item()  # from the initial weights: a check of the forward pass
    return median(times), loss0, loss.item(), peak_before, sgemm_peak()


def train_result(size, pe, threads, bf16, tokens, forward_flops, timed, steps, model, **extra):
    """The JSON line of a training bench, the fields bench_train_mini prints; timed as time_training returns."""
    med, loss0, loss, peak_before, peak_after = timed
    gflops = 3 * forward_flops / (med / 1e3) / 1e9
    peak = max(peak_before, peak_after)
    return json.dumps({"engine": "pytorch", "bench": size, "pe": pe, "threads": threads,
                       "precision": "bf16" if bf16 else "fp32", "tokens_per_s": round(tokens / (med / 1e3), 1),
                       "ms_per_step": round(med, 3), "gflops": round(gflops, 3), "sgemm_peak_gflops": round(peak, 2),
                       "sgemm_peak_before": round(peak_before, 2), "sgemm_peak_after": round(peak_after, 2),
                       "mfu": round(gflops / peak, 4), "max_rss_kb": max_rss_kb(), "loss0": round(loss0, 6),
                       "loss": round(loss, 6), "steps": steps, "params": model.n_params(), "torch": torch.__version__,
                       **extra, **tuning()})
