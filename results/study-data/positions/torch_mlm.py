"""Scratch: an independent PyTorch masked-LM pretraining of the real-data study's BERT.

The question it answers: is the plateau of the absolute PEs' held-out MLM loss
(6.17, the loss of `none`, while `rpe` reaches 4.71) posemb's, or what this model
and budget give anywhere? Same model (4 layers, width 128, 4 heads, FFN 512,
post-LN, tied decoder with HF's MLM transform), same tokens (the study's cache of
WikiText-2, Jane Austen, Tiny Shakespeare, concatenated in that order, cut into
126-token bodies between [CLS] and [SEP], the last 2% held out), HF's masking
(15%; 80/10/10), AdamW 1e-3 with HF's decay groups, warm-up 10%, linear decay,
clipping at 1, dropout 0.1, batch 32. Not the same random numbers as posemb.

    python3 torch_mlm.py CACHE_DIR PE STEPS [TOTAL] [SEED]

PE: none, ape (HF's learned table at 0.02), ape_scale (the study's amplitude
rule: the same table times a learned scalar starting at 1). TOTAL: the
schedule's length (default STEPS: a run cut short keeps the full run's rates).
Prints the held-out loss and accuracy every 150 steps, as posemb's log."""
import json, math, struct, sys, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F

torch.set_num_threads(1)
CACHE, PE, STEPS = sys.argv[1], sys.argv[2], int(sys.argv[3])
TOTAL = int(sys.argv[4]) if len(sys.argv) > 4 else STEPS
SEED = int(sys.argv[5]) if len(sys.argv) > 5 else 1
torch.manual_seed(SEED)
rng = np.random.default_rng(SEED)
V, D, H, L, T, B, LR = 30522, 128, 4, 4, 128, 32, 1e-3
CLS, SEP, MASK = 101, 102, 103


def tokens(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    a, b = h['tokens']['data_offsets']
    return np.frombuffer(raw[8 + n + a:8 + n + b], dtype=np.int32)


ids = np.concatenate([tokens(f'{CACHE}/{c}.safetensors') for c in ('wikitext-2', 'janeausten', 'tinyshakespeare')])
body = T - 2
seqs = ids[:len(ids) // body * body].reshape(-1, body)
n_valid = int(len(seqs) * 0.02)
train, valid = seqs[:-n_valid], seqs[-n_valid:]


def masked(rows, r):
    x = np.concatenate([np.full((len(rows), 1), CLS), rows, np.full((len(rows), 1), SEP)], 1).astype(np.int64)
    y = np.full_like(x, -100)
    chosen = r.random(x.shape) < 0.15
    chosen[:, 0] = chosen[:, -1] = False
    y[chosen] = x[chosen]
    u = r.random(x.shape)
    x[chosen & (u < 0.8)] = MASK
    rand = chosen & (u >= 0.8) & (u < 0.9)
    x[rand] = r.integers(0, V, rand.sum())
    return torch.from_numpy(x), torch.from_numpy(y)


class Layer(nn.Module):
    def __init__(s):
        super().__init__()
        s.qkv, s.o = nn.Linear(D, 3 * D), nn.Linear(D, D)
        s.ln1, s.ln2 = nn.LayerNorm(D, eps=1e-12), nn.LayerNorm(D, eps=1e-12)
        s.f1, s.f2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(s, x):
        Bn = x.shape[0]
        q, k, v = s.qkv(x).view(Bn, T, 3, H, D // H).permute(2, 0, 3, 1, 4)
        a = F.dropout((q @ k.transpose(-1, -2) / math.sqrt(D // H)).softmax(-1), 0.1, s.training)
        c = (a @ v).transpose(1, 2).reshape(Bn, T, D)
        x = s.ln1(x + F.dropout(s.o(c), 0.1, s.training))
        return s.ln2(x + F.dropout(s.f2(F.gelu(s.f1(x))), 0.1, s.training))


class MLM(nn.Module):
    def __init__(s):
        super().__init__()
        s.word, s.pos, s.typ = nn.Embedding(V, D), nn.Embedding(512, D), nn.Embedding(2, D)
        s.pscale = nn.Parameter(torch.ones(1), requires_grad=PE == 'ape_scale')
        s.ln = nn.LayerNorm(D, eps=1e-12)
        s.layers = nn.ModuleList([Layer() for _ in range(L)])
        s.dense, s.hln = nn.Linear(D, D), nn.LayerNorm(D, eps=1e-12)
        s.bias = nn.Parameter(torch.zeros(V))
        for m in s.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear):
                nn.init.zeros_(m.bias)

    def forward(s, x, y):
        h = s.word(x) + s.typ(torch.zeros_like(x))
        if PE != 'none':
            h = h + s.pscale * s.pos(torch.arange(T))
        h = F.dropout(s.ln(h), 0.1, s.training)
        for l in s.layers:
            h = l(h)
        sel = y.view(-1) >= 0  # the head only where there is a target
        h = s.hln(F.gelu(s.dense(h.view(-1, D)[sel])))
        logits = h @ s.word.weight.t() + s.bias
        t = y.view(-1)[sel]
        return F.cross_entropy(logits, t), (logits.argmax(-1) == t).float().mean()


m = MLM()
decay = [p for n, p in m.named_parameters() if p.requires_grad and p.dim() > 1]
rest = [p for n, p in m.named_parameters() if p.requires_grad and p.dim() <= 1]
opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.01}, {'params': rest, 'weight_decay': 0.0}], lr=LR)
warm = TOTAL // 10
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: s / warm if s < warm else max(0.0, (TOTAL - s) / (TOTAL - warm)))
vr = np.random.default_rng(12345)
held = [masked(valid[(i * B) % len(valid):][:B], vr) for i in range(8)]  # 8 batches, 32 k tokens, fixed masks


def evaluate():
    m.eval()
    with torch.no_grad():
        r = [m(x, y) for x, y in held]
    m.train()
    return sum(a for a, _ in r).item() / len(r), sum(b for _, b in r).item() / len(r)


order, t0 = rng.permutation(len(train)), time.time()
for step in range(1, STEPS + 1):
    k = (step - 1) * B % len(train)
    if k + B > len(train):
        order = rng.permutation(len(train))
        k = 0
    x, y = masked(train[order[k:k + B]], rng)
    loss, _ = m(x, y)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(m.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 150 == 0 or step == STEPS:
        el, ea = evaluate()
        print(json.dumps({'pe': PE, 'step': step, 'train': round(loss.item(), 4), 'eval': round(el, 4),
                          'accuracy': round(ea, 4), 'pscale': round(m.pscale.item(), 4),
                          'seconds': round(time.time() - t0)}), flush=True)
