"""Where a seq_reverse model goes wrong: its answer-token accuracy split by
whether the token it just copied occurs more than once in the input, and what
it writes when it is wrong.

Reversing by position needs the offset from each answer token to its source
(2j - 1 tokens back from the position that predicts the j-th answer token), which contiguous positions give
as one rotation and randomized positions blur. Reversing by content needs none:
find the token just written in the input and copy the one before it. That
chain is ambiguous exactly when the token just written occurs twice or more in
the input; it then points at the predecessor of another occurrence.

Draws examples laid out as posemb's seq_reverse at length T (default 42; a
fresh draw, not the study's stream, 48 symbols: sizes 1 .. (TRAIN-2)/2 at the
training length TRAIN (default 42), past it only the sizes training never saw,
up to (T-2)/2, as the study scores), runs the
model on them through posemb's Python module in batches of 32 (a randomized PE
draws one set of positions per batch, as in the study's evaluation) and scores
the argmax before each answer token, teacher forced as the study scores it.

    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 reverse_errors.py MODEL_DIR [T] [EXAMPLES] [TRAIN]

MODEL_DIR is a model the study kept ("analyze": 1 keeps the first seed's).
A wrong token is put in the first class it fits, in the order printed; a model
that wrote input tokens at random would land in the first class by chance too,
in proportion to the other occurrences (plain RoPE at 2x: 7% of its errors)."""
import sys
import numpy as np
import posemb

PAD, CLS, SEP, CONTENT, SYMBOLS = 0, 1, 2, 16, 48
model_dir = sys.argv[1]
T = int(sys.argv[2]) if len(sys.argv) > 2 else 42
N = int(sys.argv[3]) if len(sys.argv) > 3 else 2048
TRAIN = int(sys.argv[4]) if len(sys.argv) > 4 else 42
lo, hi = 1, (TRAIN - 2) // 2  # as size_of in src/study/synthetic_seq.c
if T > TRAIN and (T - 2) // 2 > hi:
    lo, hi = hi + 1, (T - 2) // 2
rng = np.random.default_rng(11)
m = posemb.Model(model_dir)
# tallies: [first answer token, chain unique, chain ambiguous]
right, total = np.zeros(3, int), np.zeros(3, int)
wrong_kind = {"predecessor of another occurrence": 0, "the token just written, again": 0, "skips to the next answer token": 0,
              "other input token": 0, "not in the input": 0}
for b0 in range(0, N, 32):
    B = min(32, N - b0)
    ids = np.full((B, T), PAD, np.int32)
    xs = []
    for b in range(B):
        n = int(rng.integers(lo, hi + 1))
        x = CONTENT + rng.integers(0, SYMBOLS, n)
        ids[b, 0], ids[b, 1:n + 1], ids[b, n + 1] = CLS, x, SEP
        ids[b, n + 2:2 * n + 2] = x[::-1]
        xs.append(x)
    pred = m.forward(ids)["logits"].argmax(-1)
    for b, x in enumerate(xs):
        n = len(x)
        for i in range(n):  # answer token i (from 0) copies x[n-1-i]; the logits one before it predict it
            p, want = pred[b, n + 1 + i], x[n - 1 - i]
            k = 0 if i == 0 else (1 if np.sum(x == x[n - i]) == 1 else 2)
            total[k] += 1
            right[k] += p == want
            if p == want:
                continue
            # where the other occurrences of the token just written are; one at x[0] has [CLS] before it
            others = [j for j in range(n) if x[j] == x[n - i] and j != n - i] if i else []
            if any((x[j - 1] if j else CLS) == p for j in others):
                wrong_kind["predecessor of another occurrence"] += 1
            elif n - i < n and p == x[n - i]:
                wrong_kind["the token just written, again"] += 1
            elif n - 2 - i >= 0 and p == x[n - 2 - i]:
                wrong_kind["skips to the next answer token"] += 1
            elif p in x:
                wrong_kind["other input token"] += 1
            else:
                wrong_kind["not in the input"] += 1
print("model %s (%s), T = %d, sizes %d-%d, %d examples" % (model_dir, m.pe, T, lo, hi, N))
for k, name in enumerate(["first answer token", "token just copied occurs once in the input",
                          "token just copied occurs twice or more"]):
    print("  %-45s %6d tokens, accuracy %.4f" % (name, total[k], right[k] / max(total[k], 1)))
errors = sum(wrong_kind.values())
print("  wrong tokens: %d" % errors)
for name, v in wrong_kind.items():
    print("    %-38s %6d (%.2f)" % (name, v, v / max(errors, 1)))
