"""Where the passkey fails in GPT-2 with a tied head: in finding the key, or in
writing it out?

For each model, passkey prompts of 128 bytes built as study_passkey.c builds
them (filler, the needle "The pass key is K. Remember it. K is the pass key. "
at depth d of the filler, the question, the key K), run through the model.
At each position that predicts a digit of the answer, two things:

  - copied: whether the argmax is that digit (the study's digit score);
  - attended: the attention mass on the needle's copies of that digit (the
    byte of K at the same index, in both places the needle holds K), for the
    head that puts the most there, in the layer where that head is: the
    strongest single head looking at the byte to copy.

A model whose heads find the digit (attended high) but predicts another one
fails in writing it out; one whose heads do not look at it fails in finding it.

Usage (the models of results/length/ablation-tied and the study's runs):
    PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so python3 \\
        results/length/ablation-tied/needle_attention.py NAME=MODEL_DIR ...
"""
import sys

import numpy as np

import posemb

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
L, DEPTHS, KEYS = 128, 5, 10


def encode(text):  # the study's byte tokenizer: id = byte for ASCII (posemb tokenize agrees)
    return list(text.encode("ascii"))


def prompt(key, depth):
    """ids [L], the answer's positions, the needle's digit positions [5][2]."""
    needle = encode("The pass key is %s. Remember it. %s is the pass key. " % (key, key))
    question, answer, filler = encode("What is the pass key? The pass key is "), encode(key), encode(FILLER)
    n_fill = L - len(needle) - len(question) - len(answer)
    before = int(np.floor(depth * n_fill + 0.5))  # lround, as the study (round() would go to even)
    ids = [filler[i % len(filler)] for i in range(before)]
    at_needle = len(ids)
    ids += needle + [filler[i % len(filler)] for i in range(before, n_fill)] + question
    answer_at = len(ids)
    ids += answer
    first = at_needle + len("The pass key is ")
    second = at_needle + len("The pass key is %s. Remember it. " % key)
    return np.array(ids, dtype=np.int32), answer_at, [[first + k, second + k] for k in range(5)]


def measure(model):
    rng = np.random.default_rng(7)
    copied, attended = [], []
    for d in range(DEPTHS):
        for _ in range(KEYS):
            key = "%05d" % rng.integers(10000, 100000)
            ids, answer_at, digit_at = prompt(key, d / (DEPTHS - 1))
            out = model.forward(ids[None, :])
            logits, att = out["logits"][0], out["attentions"]
            for k in range(5):
                q = answer_at + k - 1  # the position that predicts digit k
                copied.append(int(np.argmax(logits[q]) == ids[answer_at + k]))
                attended.append(max(float(a[0, h, q, digit_at[k]].sum()) for a in att for h in range(a.shape[1])))
    return np.mean(copied), np.mean(attended), np.percentile(attended, 25), np.percentile(attended, 75)


def main(args):
    print("| model | digits copied | strongest head's mass on the digit to copy: mean | 25% | 75% |")
    print("|---|---|---|---|---|")
    for arg in args:
        name, path = arg.split("=", 1)
        with posemb.Model(path) as m:
            c, a, lo, hi = measure(m)
        print("| %s | %.2f | %.2f | %.2f | %.2f |" % (name, c, a, lo, hi))


if __name__ == "__main__":
    main(sys.argv[1:])
