"""Does a pretrained BERT use word order? Its masked-LM loss on the same
masked sequences four ways: as they are; with each sequence's tokens shuffled
([CLS] and [SEP] kept in place), which leaves the loss of a model blind to order
unchanged (its predictions move with their tokens) and raises that of a model
that reads order; reversed whole ([CLS] last), which leaves the loss of a model
blind to direction unchanged (a PE symmetric in i - j, as ALiBi's -m|i - j| in
an encoder, mirrors every attention map) and raises that of one that tells left
from right; and, for a PE with a learned scale, with that scale set to 0 (the
PE removed).

    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so \
        python3 order_ablation.py CACHE MODEL_DIR...

CACHE is a study's token cache (RUN/cache/wikitext-2.safetensors, the ids of
the study's WordPiece vocabulary); 32 windows of 126 tokens are drawn from it (seed 3), 15% of
their tokens replaced by [MASK]; MODEL_DIR is a pretrained model folder or a
checkpoint. [CLS], [SEP] and [MASK] are the ids of the folder's vocab.txt (a
checkpoint-N folder without one: its training folder's, as `posemb probe
order` reads them), else BERT's 101, 102, 103; every model of one call must
share them. The models run through posemb's Python module."""
import json, os, re, shutil, struct, sys, tempfile
import numpy as np
import posemb

cache, models = sys.argv[1], sys.argv[2:]
T, B = 128, 32

def specials(model):
    """[CLS], [SEP], [MASK] from the folder's vocab.txt, or a checkpoint's training folder's (order.c's rule)."""
    d = model.rstrip("/")
    checkpoint = re.fullmatch(r"checkpoint-[0-9]+", os.path.basename(d)) and os.path.exists(f"{d}/trainer_state.json")
    if not any(os.path.exists(f"{d}/{f}") for f in ("tokenizer.json", "vocab.txt", "vocab.json")) and checkpoint:
        d = os.path.join(d, "..")
    if not os.path.exists(f"{d}/vocab.txt"):
        return 101, 102, 103
    with open(f"{d}/vocab.txt", encoding="utf-8") as f:
        vocab = {t: i for i, t in enumerate(f.read().splitlines())}
    missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
    if missing:
        sys.exit(f"order_ablation.py: {d}/vocab.txt: no {missing[0]}")
    return tuple(vocab[t] for t in ("[CLS]", "[SEP]", "[MASK]"))

if len({specials(m) for m in models}) > 1:
    sys.exit("order_ablation.py: the models' vocabularies give different [CLS], [SEP], [MASK]: one call per vocabulary")
CLS, SEP, MASK = specials(models[0])

def read(p):
    raw = open(p, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]
    return raw, n, json.loads(raw[8:8 + n])

raw, n, h = read(cache)
s, e = h["tokens"]["data_offsets"]
tokens = np.frombuffer(raw[8 + n + s:8 + n + e], dtype=np.int32)
rng = np.random.default_rng(3)
starts = rng.integers(0, len(tokens) - T, B)
ids = np.array([[CLS] + list(tokens[a:a + T - 2]) + [SEP] for a in starts])
masked = np.zeros_like(ids, dtype=bool)
masked[:, 1:T - 1] = rng.random((B, T - 2)) < 0.15
inp = np.where(masked, MASK, ids)
perm = np.array([np.concatenate([[0], 1 + rng.permutation(T - 2), [T - 1]]) for _ in range(B)])
shuf_inp = np.take_along_axis(inp, perm, 1)
rev_inp = inp[:, ::-1].copy()

def logits(model, x):
    with posemb.Model(model) as m:
        return m.forward(x)["logits"]

def ce(lg, order):  # CE at the masked positions, logits row order[t] holds original position t
    tot = cnt = 0.0
    for b in range(B):
        for t in range(T):
            if masked[b, t]:
                row = lg[b, order[b][t]].astype(np.float64)
                m = row.max(); tot += m + np.log(np.exp(row - m).sum()) - row[ids[b, t]]; cnt += 1
    return tot / cnt

ident = [list(range(T))] * B
inv = [list(np.argsort(p)) for p in perm]
for model in models:
    name = model.rstrip("/")
    res = {"as is": ce(logits(model, inp), ident), "shuffled": ce(logits(model, shuf_inp), inv),
           "reversed": ce(logits(model, rev_inp), [list(range(T - 1, -1, -1))] * B)}
    r, k, hh = read(f"{model}/model.safetensors")
    if "bert.embeddings.position_scale" in hh:
        abl = tempfile.mkdtemp()
        shutil.copy(f"{model}/config.json", abl)
        a, b = hh["bert.embeddings.position_scale"]["data_offsets"]
        buf = bytearray(r); buf[8 + k + a:8 + k + b] = struct.pack("<f", 0.0)
        open(f"{abl}/model.safetensors", "wb").write(buf)
        res["scale 0"] = ce(logits(abl, inp), ident)
        shutil.rmtree(abl)
    print(name, " ".join(f"{k2}: {v:.4f}" for k2, v in res.items()), f"({int(masked.sum())} masked tokens)")
