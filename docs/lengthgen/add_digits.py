"""Where a seq_add_hints model is right: its digit accuracy by carry-in and by
place (n digits, digit i of the sum).

Draws examples laid out as posemb's seq_add_hints at length T (default 42; a
fresh draw, not the study's stream), runs `posemb forward` on them and scores
the argmax before each digit of the sum, teacher forced as the study scores it.

    add_digits.py POSEMB MODEL_DIR OUT_DIR [T]

MODEL_DIR is a model the study kept ("analyze": 1 keeps the first task and
seed's model of each PE, in OUT/models/PE)."""
import json, struct, subprocess, sys
import numpy as np

PAD, CLS, SEP, A, DIGIT, CONTENT, HINTS = 0, 1, 2, 4, 6, 16, 48
T = int(sys.argv[4]) if len(sys.argv) > 4 else 42
posemb, model, out = sys.argv[1:4]
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
json.dump({"input_ids": rows, "attention_mask": [[1] * T for _ in rows]}, open(f"{out}/inputs.json", "w"))
subprocess.run([posemb, "forward", model, "--inputs", f"{out}/inputs.json", "--out", f"{out}/out.safetensors"],
               check=True, stdout=subprocess.DEVNULL)
raw = open(f"{out}/out.safetensors", "rb").read()
hn = struct.unpack("<Q", raw[:8])[0]
head = json.loads(raw[8:8 + hn])
s0, s1 = head["logits"]["data_offsets"]
logits = np.frombuffer(raw[8 + hn + s0:8 + hn + s1], dtype=np.float32).reshape(head["logits"]["shape"])
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
