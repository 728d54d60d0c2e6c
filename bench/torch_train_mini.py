"""PyTorch peer of bench/train_mini.c: the same BERT masked-LM training step,
written as well as PyTorch allows on a CPU (fused QKV, efficient relative
positions, MLM head on the masked rows only, torch.optim.AdamW). Prints one
JSON line with the same fields. Usage: torch_train_mini.py PE SIZE THREADS STEPS"""
import json
import math
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

SIZES = {"train-mini": (4, 256, 4, 1024, 30522, 32, 128), "train-tiny": (2, 64, 4, 256, 1000, 16, 64)}


class Layer(nn.Module):
    def __init__(self, d, h, inter, pe, k, n):
        super().__init__()
        self.h, self.dh, self.pe, self.k = h, d // h, pe, k
        self.qkv = nn.Linear(d, 3 * d)
        self.o = nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.fi, self.fo = nn.Linear(d, inter), nn.Linear(inter, d)
        if pe == "rpe":  # Shaw et al., keys and values, clipped at k
            self.ak = nn.Parameter(torch.randn(2 * k + 1, self.dh) * 0.02)
            self.av = nn.Parameter(torch.randn(2 * k + 1, self.dh) * 0.02)
            pos = torch.arange(n)
            self.register_buffer("rel", (pos[None, :] - pos[:, None]).clamp(-k, k) + k)
        if pe == "alibi":
            slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / h) for i in range(h)])
            pos = torch.arange(n)
            self.register_buffer("bias", -slopes[:, None, None] * (pos[None, :] - pos[:, None]).abs()[None].float())

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.dh).permute(2, 0, 3, 1, 4)
        s = torch.matmul(q, k.transpose(-1, -2))
        if self.pe == "rpe":  # q . aK[r] gathered by distance: never the T x T x d tensor
            idx = self.rel[:T, :T].expand(B, self.h, T, T)
            s = s + torch.gather(torch.matmul(q, self.ak.t()), -1, idx)
        s = s / math.sqrt(self.dh)
        if self.pe == "alibi":
            s = s + self.bias[:, :T, :T]
        p = torch.softmax(s, -1)
        z = torch.matmul(p, v)
        if self.pe == "rpe":  # probabilities summed per distance, then times aV
            w = torch.zeros(B, self.h, T, 2 * self.k + 1).scatter_add_(-1, idx, p)
            z = z + torch.matmul(w, self.av)
        z = z.transpose(1, 2).reshape(B, T, D)
        x = self.ln1(x + self.o(z))
        return self.ln2(x + self.fo(F.gelu(self.fi(x))))


class Bert(nn.Module):
    def __init__(self, layers, d, h, inter, vocab, n, pe):
        super().__init__()
        self.pe = pe
        self.we, self.tt = nn.Embedding(vocab, d), nn.Embedding(2, d)
        if pe == "ape":
            self.pos = nn.Embedding(n, d)
        if pe == "sin":
            pos, i = torch.arange(n)[:, None].float(), torch.arange(0, d, 2).float()
            w = torch.exp(-math.log(10000.0) * i / d)
            table = torch.zeros(n, d)
            table[:, 0::2], table[:, 1::2] = torch.sin(pos * w), torch.cos(pos * w)
            self.register_buffer("table", table)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(Layer(d, h, inter, pe, 64, n) for _ in range(layers))
        self.tdense, self.tln = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)
        self.bias = nn.Parameter(torch.zeros(vocab))
        for m in self.modules():  # BERT's initialisation, as posemb's
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(self, ids, masked_rows, targets):
        B, T = ids.shape
        x = self.we(ids) + self.tt(torch.zeros_like(ids))
        if self.pe == "ape":
            x = x + self.pos(torch.arange(T))[None]
        if self.pe == "sin":
            x = x + self.table[:T][None]
        x = self.ln(x)
        for layer in self.layers:
            x = layer(x)
        h = x.reshape(B * T, -1)[masked_rows]  # the head on the masked tokens only
        h = self.tln(F.gelu(self.tdense(h)))
        return F.cross_entropy(h @ self.we.weight.t() + self.bias, targets)


def main():
    pe, size, threads, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if pe not in ("none", "ape", "sin", "rpe", "alibi"):
        print(json.dumps({"engine": "pytorch", "pe": pe, "skipped": "no PyTorch peer for this PE yet"}))
        return
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    L, d, h, inter, vocab, B, T = SIZES[size]
    model = Bert(L, d, h, inter, vocab, T, pe)
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(vocab // 4, vocab, (B, T), generator=g)
    chosen = torch.rand(B * T, generator=g) < 0.15
    rows = chosen.nonzero().squeeze(1)
    targets = ids.reshape(-1)[rows]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    times = []
    for i in range(steps + 2):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(ids, rows, targets)
        loss.backward()
        opt.step()
        if i >= 2:
            times.append(1e3 * (time.perf_counter() - t0))
    times.sort()
    med = times[len(times) // 2]
    masked = int(rows.numel())
    tokens, D, FF = B * T, d, inter
    flops = 3 * (2 * tokens * L * (4 * D * D + 2 * D * FF) + 4 * B * T * T * D * L + 2 * masked * (D * D + D * vocab))
    a = torch.rand(1536, 1536)
    peak = 0.0
    for _ in range(6):
        t0 = time.perf_counter()
        torch.mm(a, a)
        peak = max(peak, 2 * 1536 ** 3 / (time.perf_counter() - t0) / 1e9)
    gflops = flops / (med / 1e3) / 1e9
    print(json.dumps({"engine": "pytorch", "bench": size, "pe": pe, "threads": threads,
                      "tokens_per_s": round(tokens / (med / 1e3), 1), "ms_per_step": round(med, 2),
                      "gflops": round(gflops, 2), "sgemm_peak_gflops": round(peak, 2), "mfu": round(gflops / peak, 3),
                      "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "loss": round(loss.item(), 4),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
