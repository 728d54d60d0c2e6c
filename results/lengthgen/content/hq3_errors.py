"""Why plain RoPE's reversing errors lean to the content class at 8 symbols
(HQ3's failure; README "HQ3's failure: an experiment"). Three read-outs of
one kept model on freshly drawn seq_reverse_aK rows at length T:

1. Its wrong tokens by class, as src/study/synthetic_seq.c's
   seq_error_class puts them (a second implementation: the content-alone
   excess over the uniform chance should land near the study's line), and
   the content-alone excess over a second chance: a wrong guess drawn from
   the input's own tokens (each input position other than the right
   symbol's equally likely). A symbol frequent in the input is both likelier
   to be written by a guess among input tokens and likelier to precede an
   occurrence of the token just written, which the uniform chance ignores.
2. How far the written symbol sits from the right source: the distance to
   the nearest input position that holds it, against the same for the
   input-token guess.
3. The intervention: on answer tokens the model gets right, the token just
   written (teacher forced) is replaced by another alphabet symbol v; a
   model that reads on from the token just written (the content route)
   then writes the predecessor of an occurrence of v, one that addresses the
   source by position keeps writing the right symbol. (The moved tokens'
   chance among the input's other tokens was added after the plan: not
   part of HX3.)

    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 hq3_errors.py MODEL_DIR ALPHABET [T] [EXAMPLES] [TRAIN]

Defaults: T 84, EXAMPLES 2048 (the intervention uses the first 256), TRAIN
42. Prints one block of numbers; same draw for every model (seed 11)."""
import sys
import numpy as np
import posemb

PAD, CLS, SEP, CONTENT = 0, 1, 2, 16
model_dir, A = sys.argv[1], int(sys.argv[2])
T = int(sys.argv[3]) if len(sys.argv) > 3 else 84
N = int(sys.argv[4]) if len(sys.argv) > 4 else 2048
TRAIN = int(sys.argv[5]) if len(sys.argv) > 5 else 42
N_SWAP = min(N, 256)
lo, hi = 1, (TRAIN - 2) // 2  # as size_of in src/study/synthetic_seq.c
if T > TRAIN and (T - 2) // 2 > hi:
    lo, hi = hi + 1, (T - 2) // 2
rng = np.random.default_rng(11)
m = posemb.Model(model_dir)


def sets(x, k):
    """The position set and the content set of output k (seq_error_class's
    rules for reverse): symbols, the right one left out."""
    n = len(x)
    src, prev = n - 1 - k, n - k
    want = x[src]
    pos = {x[s] for s in (src - 1, src + 1) if 0 <= s < n and x[s] != want}
    cont = {x[j - 1] for j in range(1, n) if k >= 1 and j != prev and x[j] == x[prev] and x[j - 1] != want}
    return pos, cont


def row(x):
    n = len(x)
    ids = np.full(T, PAD, np.int32)
    ids[0], ids[1:n + 1], ids[n + 1] = CLS, x, SEP
    ids[n + 2:2 * n + 2] = x[::-1]
    return ids


def nearest(x, sym, src):
    d = [abs(j - src) for j in range(len(x)) if x[j] == sym]
    return min(d) if d else -1


examples = [CONTENT + rng.integers(0, A, int(rng.integers(lo, hi + 1))) for _ in range(N)]
preds = []
for b0 in range(0, N, 32):
    batch = examples[b0:b0 + 32]
    preds.extend(m.forward(np.stack([row(x) for x in batch]))["logits"].argmax(-1))

right = total = 0
cls = np.zeros(4)  # wrong tokens: position, content, both (counted in each), content alone
uni = np.zeros(3)  # uniform chance: position, content, content alone
inp = np.zeros(3)  # the input-token guess's chance
dist = {}
dist_guess = {}
for x, pred in zip(examples, preds):
    n = len(x)
    for k in range(n):
        src, p = n - 1 - k, pred[n + 1 + k]
        total += 1
        if p == x[src]:
            right += 1
            continue
        pos, cont = sets(x, k)
        cls += [p in pos, p in cont, p in pos and p in cont, p in cont and p not in pos]
        alone = cont - pos
        uni += [len(pos) / (A - 1), len(cont) / (A - 1), len(alone) / (A - 1)]
        others = [s for s in x if s != x[src]]
        if others:
            inp += [np.mean([s in pos for s in others]), np.mean([s in cont for s in others]),
                    np.mean([s in alone for s in others])]
            near = {v: nearest(x, v, src) for v in set(others)}  # once per symbol, not per occurrence
            for s in others:
                dist_guess[near[s]] = dist_guess.get(near[s], 0) + 1 / len(others)
        dd = nearest(x, p, src) if CONTENT <= p < CONTENT + A else -1
        dist[dd] = dist.get(dd, 0) + 1
wrong = total - right
print("model %s (%s), alphabet %d, T %d, sizes %d-%d, %d examples" % (model_dir, m.pe, A, T, lo, hi, N))
print("token accuracy %.4f (%d of %d); wrong %d" % (right / total, right, total, wrong))
if wrong:
    print("share of wrong: position %.4f  content %.4f  content alone %.4f" % (cls[0] / wrong, cls[1] / wrong,
                                                                            cls[3] / wrong))
    print("uniform chance: position %.4f  content %.4f  content alone %.4f" % tuple(uni / wrong))
    print("input chance:   position %.4f  content %.4f  content alone %.4f" % tuple(inp / wrong))
    print("content-alone excess: over uniform %+.4f  over input %+.4f" % (cls[3] / wrong - uni[2] / wrong,
                                                                         cls[3] / wrong - inp[2] / wrong))
    g = sum(dist_guess.values())
    for lo_d, hi_d, name in [(1, 1, "1"), (2, 3, "2-3"), (4, 7, "4-7"), (8, 99, "8+")]:
        w = sum(v for d, v in dist.items() if lo_d <= d <= hi_d) / wrong
        h = sum(v for d, v in dist_guess.items() if lo_d <= d <= hi_d) / g
        print("nearest occurrence %-4s from the source: wrong %.4f  input guess %.4f" % (name, w, h))
    print("written symbol not in the input or not a symbol: %.4f" % (dist.get(-1, 0) / wrong))

# 3. the intervention, on the first N_SWAP examples' right tokens (k >= 1)
kept = follows = chance = chance_in = swaps = 0
variants = []
for i, x in enumerate(examples[:N_SWAP]):
    n = len(x)
    for k in range(1, n):
        src = n - 1 - k
        if preds[i][n + 1 + k] != x[src]:
            continue
        v = CONTENT + int(rng.integers(0, A - 1))
        v += v >= x[src + 1]  # any alphabet symbol but the token just written
        variants.append((x, k, v))
for b0 in range(0, len(variants), 32):
    batch = variants[b0:b0 + 32]
    ids = np.stack([row(x) for x, _, _ in batch])
    for r, (x, k, v) in enumerate(batch):
        ids[r, len(x) + 1 + k] = v  # the token just written, replaced
    out = m.forward(ids)["logits"].argmax(-1)
    for r, (x, k, v) in enumerate(batch):
        n, src = len(x), len(x) - 1 - k
        p = out[r, n + 1 + k]
        swaps += 1
        if p == x[src]:
            kept += 1
            continue
        pre = {x[j - 1] for j in range(1, n) if x[j] == v} - {x[src]}  # predecessors of v's occurrences
        follows += p in pre
        chance += len(pre) / (A - 1)
        others = [s for s in x if s != x[src]]  # a guess among the input's other tokens (added after the plan)
        chance_in += np.mean([s in pre for s in others]) if others else 0.0
if swaps:
    moved = swaps - kept
    print("intervention: %d right tokens (k >= 1, first %d examples), the token just written replaced" % (swaps, N_SWAP))
    print("  still right %.4f; moved %d" % (kept / swaps, moved))
    if moved:
        print("  of the moved: to a predecessor of the new token %.4f (a uniform wrong guess: %.4f; a guess among"
              " the input's other tokens: %.4f)" % (follows / moved, chance / moved, chance_in / moved))
