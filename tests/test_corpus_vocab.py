"""scripts/corpus-vocab on a small data folder laid out like ../shared/data:
the vocabulary's form (size, specials first, every character alone and with
"##", no duplicate), that every word of the corpus tokenizes without [UNK]
under it, that it is deterministic, that SOURCES.md gives its sha256 and the
inputs', that the study's tokenizer reads it, and the failures (one line,
exit 1). Skipped (77) without Debian's spm_train. POSEMB_BIN: the built posemb."""
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "scripts", "corpus-vocab")
POSEMB = os.environ.get("POSEMB_BIN", os.path.join(HERE, "..", "build", "posemb"))
TEXT = {
    "wikitext-2/wiki.valid.tokens": " = Valkyria Chronicles III = \n\n Senjō no Valkyria 3 : Unrecorded Chronicles "
                                    "( Japanese : 戦場のヴァルキュリア3 ) is a tactical role @-@ playing game .\n" * 30,
    "janeausten/emma.txt": "Emma Woodhouse, handsome, clever, and rich, with a comfortable home and happy "
                           "disposition, seemed to unite some of the best blessings of existence.\n" * 30,
    "janeausten/persuasion.txt": "Sir Walter Elliot, of Kellynch Hall, in Somersetshire, was a man who, "
                                 "for his own amusement, never took up any book but the Baronetage.\n" * 30,
    "tinyshakespeare/input.txt": "First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\n"
                                 "Speak, speak.\n" * 30,
}
_rng = random.Random(1)  # made-up words, so that the corpus has more than 1000 pieces to learn
TEXT["wikitext-2/wiki.test.tokens"] = "".join(
    " ".join("".join(_rng.choice("abcdefghijklmnoprstu") for _ in range(_rng.randint(3, 9))) for _ in range(12)) + " .\n"
    for _ in range(400))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args, "--posemb", POSEMB], capture_output=True, text=True)


def words(data):
    bert = os.path.join(data, "bert-base-uncased", "vocab.txt")
    out = []
    for name in sorted(TEXT):
        with open(os.path.join(data, name), "rb") as f:
            r = subprocess.run([POSEMB, "tokenize", "--vocab", bert, "--words"], stdin=f, capture_output=True)
        assert r.returncode == 0, r.stderr
        out += r.stdout.decode().split()
    return out


class CorpusVocab(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp()
        cls.data = os.path.join(cls.tmp, "data")
        for name, text in TEXT.items():
            os.makedirs(os.path.dirname(os.path.join(cls.data, name)), exist_ok=True)
            with open(os.path.join(cls.data, name), "w", encoding="utf-8") as f:
                f.write(text)
        os.makedirs(os.path.join(cls.data, "bert-base-uncased"))
        with open(os.path.join(cls.data, "bert-base-uncased", "vocab.txt"), "w") as f:
            f.write("[PAD]\n" + "".join(f"[unused{i}]\n" for i in range(99)) + "[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n")
        cls.out = os.path.join(cls.data, "vocab-1000")
        cls.r = run(cls.data, cls.out, "1000")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def vocab(self, path=None):
        with open(path or os.path.join(self.out, "vocab.txt"), encoding="utf-8") as f:
            return f.read().split("\n")[:-1]

    def test_form(self):
        self.assertEqual(self.r.returncode, 0, self.r.stderr)
        v = self.vocab()
        self.assertEqual(len(v), 1000)
        self.assertEqual(v[:5], ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        self.assertEqual(len(set(v)), len(v))
        chars = {c for w in words(self.data) for c in w} | {chr(i) for i in range(33, 127)}  # and printable ASCII
        for c in chars:
            self.assertIn(c, v)
            self.assertIn("##" + c, v)
        self.assertIn("戦", v)  # a CJK ideograph is a word of its own
        self.assertNotIn("jō", v)  # accents stripped as the uncased tokenizer does

    def test_no_unknown_and_learned(self):
        path = os.path.join(self.out, "vocab.txt")
        text = " ".join(words(self.data))
        r = subprocess.run([POSEMB, "tokenize", "--vocab", path, text], capture_output=True, text=True)
        tokens = r.stdout.split("\n")[0].split()
        self.assertNotIn("[UNK]", tokens)
        for w in ("speak", "valkyria", "chronicles", "emma", "the"):  # frequent words are whole tokens
            self.assertIn(w, self.vocab())
        self.assertLess(len(tokens), 0.6 * len("".join(text.split())))  # pieces, not characters

    def test_deterministic_and_sources(self):
        again = os.path.join(self.data, "again")
        self.assertEqual(run(self.data, again, "1000").returncode, 0)
        with open(os.path.join(self.out, "vocab.txt"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(os.path.join(again, "vocab.txt"), "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest)
        shutil.rmtree(again)
        with open(os.path.join(self.out, "SOURCES.md")) as f:
            src = f.read()
        self.assertIn(digest, src)
        with open(os.path.join(self.data, "janeausten", "emma.txt"), "rb") as f:
            self.assertIn(hashlib.sha256(f.read()).hexdigest(), src)
        self.assertIn("spm_train", src)
        self.assertEqual(sorted(os.listdir(self.out)), ["SOURCES.md", "vocab.txt"])  # no temporary left

    def test_size_too_small_for_the_characters(self):
        big = os.path.join(self.tmp, "big")
        shutil.copytree(self.data, big, ignore=shutil.ignore_patterns("vocab-*"))
        with open(os.path.join(big, "tinyshakespeare", "input.txt"), "a", encoding="utf-8") as f:
            f.write(" ".join(chr(0x4E00 + i) for i in range(500)) + "\n")  # 500 ideographs, each a word
        r = run(big, os.path.join(big, "v"), "1000")
        self.assertEqual(r.returncode, 1)
        self.assertIn("SIZE 1000: the ", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(big, "v", "vocab.txt")))

    def test_failures(self):
        for args, frag in (((os.path.join(self.tmp, "nowhere"), self.out, "1000"), "nowhere/bert-base-uncased/vocab.txt: missing"),
                           ((self.data, self.out, "900000"), "spm_train"),
                           ((self.data, self.out, "10"), "SIZE 10"),
                           ((self.data, self.out), "usage"),
                           ((self.data, self.out, "many"), "usage"),
                           ((self.data, self.out, "\u00b2000"), "usage")):
            r = run(*args)
            self.assertEqual(r.returncode, 1, args)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(frag, r.stderr)


if __name__ == "__main__":
    if not shutil.which("spm_train"):
        print("skipped: no spm_train (Debian's sentencepiece)")
        sys.exit(77)
    unittest.main()
