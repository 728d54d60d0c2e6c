"""Where a seq_add_hints model is right: its digit accuracy by carry-in and by
place (n digits, digit i of the sum).

Draws examples laid out as posemb's seq_add_hints at length T (default 42; a
fresh draw, not the study's stream), runs the model on them through posemb's
Python module and scores the argmax before each digit of the sum, teacher
forced as the study scores it.

    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 add_digits.py MODEL_DIR [T]

MODEL_DIR is a model the study kept ("analyze": 1 keeps the first task and
seed's model of each PE, in OUT/models/PE)."""
import sys
import numpy as np
import posemb

PAD, CLS, SEP, A, DIGIT, CONTENT, HINTS = 0, 1, 2, 4, 6, 16, 48
model = sys.argv[1]
T = int(sys.argv[2]) if len(sys.argv) > 2 else 42
rng = np.random.default_rng(7)
rows, digits = [], []  # digits: (row, position of c_i, c_i, carry_in, i, n)
for b in range(1200):
    n = int(rng.integers(1, (T - 5) // 6 + 1))
    h0 = CONTENT + int(rng.integers(0, HINTS - n))
    a, bb = rng.integers(0, 10, n), rng.integers(0, 10, n)
    ids = [CLS]
    for i in range(n): ids += [h0 + i, DIGIT + int(a[i])]
    ids.append(A)
    for i in range(n): ids += [h0 + i, DIGIT + int(bb[i])]
    ids.append(SEP)
    carry = 0
    for i in range(n + 1):
        s = int(a[i] + bb[i]) + carry if i < n else carry
        ids += [h0 + i, DIGIT + s % 10]
        digits.append((b, len(ids) - 1, DIGIT + s % 10, carry, i, n))
        carry = s // 10
    rows.append(ids + [PAD] * (T - len(ids)))
with posemb.Model(model) as m:
    logits = m.forward(np.array(rows))["logits"]
groups = {}
for b, p, c, cin, i, n in digits:
    key = ("carry-in 1" if cin else "carry-in 0") + (", final digit" if i == n else "")
    g = groups.setdefault(key, [0, 0])
    g[0] += int(np.argmax(logits[b, p - 1]) == c)
    g[1] += 1
tot = sum(g[1] for g in groups.values())
print(f"all: {sum(g[0] for g in groups.values()) / tot:.3f} of {tot} digits")
for k in sorted(groups):
    print(f"{k}: {groups[k][0] / groups[k][1]:.3f} of {groups[k][1]}")
by = {}
for b, p, c, cin, i, n in digits:
    if i == n: continue
    g = by.setdefault((n, i), [0, 0]); g[0] += int(np.argmax(logits[b, p - 1]) == c); g[1] += 1
print("non-final digit accuracy by (n, i):")
for n in range(1, (T - 5) // 6 + 1):
    print(n, " ".join(f"{by[(n, i)][0] / by[(n, i)][1]:.2f}" for i in range(n)))
