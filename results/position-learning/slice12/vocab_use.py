#!/usr/bin/env python3
"""How the study's corpora use slice 12's vocabulary (../README.md, "Slice
12"): each corpus file tokenized whole by `posemb tokenize --vocab
vocab-8000/vocab.txt` (BERT's WordPiece, uncased, as the study reads it),
then the tokens, the [UNK]s, and how many of the 8,000 ids occur at
least 1, 10 and 100 times. Writes nothing; prints the counts.
    python3 results/position-learning/slice12/vocab_use.py POSEMB DATA
POSEMB: the program; DATA: ../shared/data (its wikitext-2, janeausten,
tinyshakespeare folders, the study's default corpora)."""
import collections
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPORA = ("wikitext-2", "janeausten", "tinyshakespeare")


def main(posemb, data):
    vocab = os.path.join(HERE, "vocab-8000", "vocab.txt")
    unk = [l.rstrip("\n") for l in open(vocab, encoding="utf-8")].index("[UNK]")
    counts, total = collections.Counter(), 0
    for corpus in CORPORA:
        folder = os.path.join(data, corpus)
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as f:
                out = subprocess.run([posemb, "tokenize", "--vocab", vocab], stdin=f, capture_output=True, check=True)
            ids = [int(x) for x in out.stdout.decode().split("\n")[1].split()]
            counts.update(ids)
            total += len(ids)
            print(f"{corpus}/{name}: {len(ids)} tokens")
    print(f"all: {total} tokens, {counts[unk]} [UNK]; ids occurring: {len(counts)} at least once, "
          f"{sum(c >= 10 for c in counts.values())} at least 10 times, {sum(c >= 100 for c in counts.values())} "
          f"at least 100 times (of {sum(1 for _ in open(vocab, encoding='utf-8'))})")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
