"""Scratch: an independent PyTorch fine-tuning of the same pretrained BERT on the same SQuAD windows."""
import json, math, struct, subprocess, sys, time
import numpy as np, torch, torch.nn as nn, torch.nn.functional as F

torch.set_num_threads(1)
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1
torch.manual_seed(seed); np.random.seed(seed)
STEPS, B, LR, D, H, L = int(sys.argv[3]) if len(sys.argv) > 3 else 1200, 32, 3e-4, 128, 4, 4

def read_st(path):
    f = open(path, 'rb'); n = struct.unpack('<Q', f.read(8))[0]; h = json.loads(f.read(n)); base = 8 + n
    raw = open(path, 'rb').read()
    return {k: torch.from_numpy(np.frombuffer(raw[base + v['data_offsets'][0]: base + v['data_offsets'][1]], dtype=np.float32).reshape(v['shape']).copy())
            for k, v in h.items() if k != '__metadata__'}

def read_feats(path):
    a = np.fromfile(path, dtype=np.int32); n, T = a[0], a[1]; o = 2; nt = n * T
    ids = a[o:o + nt].reshape(n, T); o += nt
    types = a[o:o + nt].reshape(n, T); o += nt
    mask = a[o:o + nt].view(np.float32).reshape(n, T); o += nt
    st = a[o:o + n]; o += n; en = a[o:o + n]
    return [torch.from_numpy(x.copy()) for x in (ids, types, mask)] + [torch.from_numpy(st.astype(np.int64)), torch.from_numpy(en.astype(np.int64))]

class Layer(nn.Module):
    def __init__(s):
        super().__init__()
        s.q, s.k, s.v, s.o = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
        s.ln1, s.ln2 = nn.LayerNorm(D, eps=1e-12), nn.LayerNorm(D, eps=1e-12)
        s.f1, s.f2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
    def forward(s, x, bias):
        Bn, T, _ = x.shape
        sp = lambda t: t.view(Bn, T, H, D // H).transpose(1, 2)
        a = (sp(s.q(x)) @ sp(s.k(x)).transpose(-1, -2)) / math.sqrt(D // H) + bias
        a = F.dropout(a.softmax(-1), 0.1, s.training)
        c = (a @ sp(s.v(x))).transpose(1, 2).reshape(Bn, T, D)
        x = s.ln1(x + F.dropout(s.o(c), 0.1, s.training))
        return s.ln2(x + F.dropout(s.f2(F.gelu(s.f1(x))), 0.1, s.training))

class QA(nn.Module):
    def __init__(s):
        super().__init__()
        s.word, s.pos, s.typ = nn.Embedding(30522, D), nn.Embedding(512, D), nn.Embedding(2, D)
        s.pscale = nn.Parameter(torch.ones(1)); s.ln = nn.LayerNorm(D, eps=1e-12)
        s.layers = nn.ModuleList([Layer() for _ in range(L)]); s.qa = nn.Linear(D, 2)
    def forward(s, ids, types, mask):
        T = ids.shape[1]
        x = s.word(ids) + s.pscale * s.pos(torch.arange(T)) + s.typ(types)
        x = F.dropout(s.ln(x), 0.1, s.training)
        bias = ((1.0 - mask) * torch.finfo(torch.float32).min)[:, None, None, :]
        for l in s.layers: x = l(x, bias)
        return s.qa(x)

def load(m, w):
    g = lambda k: w['bert.' + k]
    with torch.no_grad():
        m.word.weight.copy_(g('embeddings.word_embeddings.weight')); m.pos.weight.copy_(g('embeddings.position_embeddings.weight'))
        m.typ.weight.copy_(g('embeddings.token_type_embeddings.weight')); m.pscale.copy_(g('embeddings.position_scale'))
        m.ln.weight.copy_(g('embeddings.LayerNorm.weight')); m.ln.bias.copy_(g('embeddings.LayerNorm.bias'))
        for i, l in enumerate(m.layers):
            p = f'encoder.layer.{i}.'
            for mod, name in ((l.q, 'attention.self.query'), (l.k, 'attention.self.key'), (l.v, 'attention.self.value'),
                              (l.o, 'attention.output.dense'), (l.f1, 'intermediate.dense'), (l.f2, 'output.dense'),
                              (l.ln1, 'attention.output.LayerNorm'), (l.ln2, 'output.LayerNorm')):
                mod.weight.copy_(g(p + name + '.weight')); mod.bias.copy_(g(p + name + '.bias'))

m = QA()
if sys.argv[1] != 'scratch':
    w = read_st(sys.argv[1]); load(m, w)
    if 'qa_outputs.weight' in w and len(sys.argv) > 4:  # check: the fine-tuned posemb model, evaluated here
        with torch.no_grad(): m.qa.weight.copy_(w['qa_outputs.weight']); m.qa.bias.copy_(w['qa_outputs.bias'])
tr, ev = read_feats('train.bin'), read_feats('eval.bin')
decay = [p for n, p in m.named_parameters() if p.dim() > 1]
nodecay = [p for n, p in m.named_parameters() if p.dim() <= 1]
opt = torch.optim.AdamW([{'params': decay, 'weight_decay': 0.01}, {'params': nodecay, 'weight_decay': 0.0}], lr=LR, eps=1e-8)
warm = STEPS // 10
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: s / warm if s < warm else max(0.0, (STEPS - s) / (STEPS - warm)))

def evaluate(step):
    m.eval(); out = []
    with torch.no_grad():
        for i in range(0, ev[0].shape[0], 64): out.append(m(ev[0][i:i + 64], ev[1][i:i + 64], ev[2][i:i + 64]))
    torch.cat(out).numpy().astype(np.float32).tofile(f'logits_{seed}.bin'); m.train()
    r = subprocess.run(['./squadio', 'score', f'logits_{seed}.bin'], capture_output=True, text=True).stdout.strip()
    print(f'step {step} {r}', flush=True)

if len(sys.argv) > 4: evaluate(0); sys.exit(0)
n = tr[0].shape[0]; perm = np.random.permutation(n); pi = 0; t0 = time.time(); m.train()
for step in range(1, STEPS + 1):
    if pi + B > n: perm = np.random.permutation(n); pi = 0
    idx = torch.from_numpy(perm[pi:pi + B]); pi += B
    z = m(tr[0][idx], tr[1][idx], tr[2][idx])
    loss = (F.cross_entropy(z[..., 0], tr[3][idx]) + F.cross_entropy(z[..., 1], tr[4][idx])) / 2
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    if step % 100 == 0: print(f'step {step} loss {loss.item():.4f} {time.time() - t0:.0f}s', flush=True)
    if step % 400 == 0 or step == STEPS: evaluate(step)
