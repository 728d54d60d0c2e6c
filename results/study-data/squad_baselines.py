#!/usr/bin/env python3
"""Trivial baselines of SQuAD F1 on the study's held-out part of dev-v1.1.json (every 5th
article, 1975 questions), with the official normalisation: the first k words of the
paragraph, a random 3-word span, a window that overlaps the question most.
Usage: results/study-data/squad_baselines.py [dev-v1.1.json] (default: ../shared/data/squad/)."""
import collections
import json
import os
import random
import re
import string
import sys
def norm(s):
    s = s.lower()
    s = ''.join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r'\b(a|an|the)\b', ' ', s)
    return ' '.join(s.split())
def f1(pred, gold):
    p, g = norm(pred).split(), norm(gold).split()
    common = collections.Counter(p) & collections.Counter(g)
    ns = sum(common.values())
    if ns == 0: return 0.0
    pr, rc = ns / len(p), ns / len(g)
    return 2 * pr * rc / (pr + rc)
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../../shared/data/squad/dev-v1.1.json')
d = json.load(open(sys.argv[1] if len(sys.argv) > 1 else PATH))['data']
qs = []
for i, art in enumerate(d):
    if i % 5 != 4: continue
    for para in art['paragraphs']:
        for qa in para['qas']:
            qs.append((para['context'], qa['question'], [a['text'] for a in qa['answers']]))
print(len(qs), "questions")
def score(pred_fn):
    return sum(max(f1(pred_fn(c, q), a) for a in ans) for c, q, ans in qs) / len(qs)
for k in (1, 2, 3, 4, 5, 8):
    print("first %d words: F1 %.3f" % (k, score(lambda c, q, k=k: ' '.join(c.split()[:k]))))
rng = random.Random(0)
def rand_span(c, q):
    w = c.split(); i = rng.randrange(len(w)); return ' '.join(w[i:i + 3])
print("random 3-word span: F1 %.3f" % score(rand_span))
# the sentence with the most question-word overlap, its first 4 words after the overlap... simple: the best-overlap 3-word window not made of question words
stop = set("the a an of in to is was what which who when where how why did does do for on by with as at from and or that this".split())
def overlap_window(c, q, L=8):
    w = c.split(); qw = set(norm(q).split()) - stop
    best, bi = -1, 0
    for i in range(max(1, len(w) - L + 1)):
        s = sum(1 for x in w[i:i + L] if norm(x) in qw)
        if s > best: best, bi = s, i
    win = [x for x in w[bi:bi + L] if norm(x) not in qw]
    return ' '.join(win[:3])
print("question-overlap window (8 words), 3 non-question words of it: F1 %.3f" % score(overlap_window))
