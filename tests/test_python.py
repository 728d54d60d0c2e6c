"""The Python module (python/posemb) against the CLI and Hugging Face.

Run by ctest with POSEMB_LIBRARY (the built libposemb.so), POSEMB_BIN (the
CLI), POSEMB_SHARED (../shared; the parity cases skip without it) and
PYTHONPATH=python. Needs numpy (Debian: python3-numpy)."""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

try:
    import numpy as np
except ImportError:  # ctest reads exit status 77 as "skipped"
    print("test_python: numpy is not installed (Debian: python3-numpy); skipped")
    sys.exit(77)

import posemb

BIN = os.environ.get("POSEMB_BIN", "posemb")
SHARED = os.environ.get("POSEMB_SHARED", "")
GOLDEN = os.path.join(SHARED, "golden")


def read_safetensors(path):
    """{name: array} of a .safetensors file (F32, I64 and U8), written here
    from the format's definition so the test does not read through posemb."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    dtypes = {"F32": np.float32, "I64": np.int64, "U8": np.uint8}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        a, b = e["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + a:8 + n + b], dtype=dtypes[e["dtype"]]).reshape(e["shape"])
    return out


def cli(*args):
    subprocess.run([BIN, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class TestPE(unittest.TestCase):
    def test_sinusoid_closed_form(self):
        t = posemb.pe_matrices("sin", length=50, dim=16)
        self.assertEqual(list(t)[0], "ape")
        pos = np.arange(50)[:, None]
        freq = 10000.0 ** (-np.arange(0, 16, 2) / 16.0)
        want = np.empty((50, 16))
        want[:, 0::2], want[:, 1::2] = np.sin(pos * freq), np.cos(pos * freq)
        self.assertLess(np.abs(t["ape"] - want).max(), 1e-6)

    def test_same_matrices_as_the_cli(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "pe.safetensors")
            cli("pe", "lsin+lsrpe", "--len", "40", "--dim", "32", "--heads", "4", "--seed", "3", "--out", path)
            want = read_safetensors(path)
        got = posemb.pe_matrices("lsin+lsrpe", length=40, dim=32, heads=4, seed=3)
        self.assertEqual(sorted(got), sorted(want))
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=name)

    def test_alibi_bias_per_head(self):
        t = posemb.pe_matrices("alibi", length=8, dim=16, heads=2)
        self.assertIn("bias.head0", t)
        i, j = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
        slope = 2.0 ** -4  # H = 2: slopes 2^-4, 2^-8
        self.assertLess(np.abs(t["bias.head0"] - (-slope * np.abs(j - i))).max(), 1e-6)

    def test_none_has_no_matrices(self):
        self.assertEqual(posemb.pe_matrices("none", 8, 8), {})

    def test_bad_spec_raises_the_message(self):
        with self.assertRaises(posemb.Error) as e:
            posemb.pe_matrices("rpe:k=0", 8, 8)
        self.assertIn("spec 'rpe:k=0'", str(e.exception))
        self.assertEqual(e.exception.code, "invalid argument")
        with self.assertRaises(posemb.Error):
            posemb.pe_matrices("nosuchpe", 8, 8)

    def test_modern_pes(self):
        # FIRE's bias at its initialisation against its formula, from the exported MLP
        t = posemb.pe_matrices("fire:threshold=4,c=0.5", length=7, dim=16, heads=2, seed=5)
        psi = t["fire_psi"]
        self.assertAlmostEqual(float(psi[0, 0]), 0.5, places=6)
        self.assertAlmostEqual(float(psi[1, 0]), 4.0, places=6)
        self.assertEqual(t["bias.head1"].shape, (7, 7))
        # decoder-only PEs: refused in an encoder, built in a decoder
        with self.assertRaises(posemb.Error) as e:
            posemb.pe_spec("cope")
        self.assertIn("defined for decoders", str(e.exception))
        self.assertEqual(posemb.pe_spec("cope", dim=16, causal=True), "cope:npos=64")
        self.assertEqual(posemb.pe_spec("fox:bias=2", dim=16, causal=True), "fox:bias=2")
        self.assertEqual(posemb.pe_spec("random:max=64+ape", dim=16, max_len=64),
                         "ape:integration=add+random:max=64")

    def test_families_listed(self):
        fam = posemb.pe_families()
        for name in ("ape", "sin", "rpe", "rope", "alibi", "t5"):
            self.assertIn(name, fam)


class TestAnalyze(unittest.TestCase):
    def test_same_indicators_as_the_cli(self):
        table = posemb.pe_matrices("sin", length=96, dim=48)["ape"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "pe.safetensors")
            cli("pe", "sin", "--len", "96", "--dim", "48", "--out", path)
            cli("analyze", path, "--tensor", "ape", "-K", "16", "--no-figures", "--out", os.path.join(d, "a"))
            with open(os.path.join(d, "a", "indicators.json")) as f:
                want = json.load(f)
        got = posemb.analyze(table, K=16)
        for volatile in ("source", "provenance", "seconds"):
            want.pop(volatile, None)
            got.pop(volatile, None)
        self.assertEqual(got, want)

    def test_closed_form_of_a_linear_table(self):
        # P[i] = i along one axis: the dot similarity i*j; the regression probe is exact.
        table = np.zeros((64, 4), dtype=np.float32)
        table[:, 0] = np.arange(64)
        r = posemb.analyze(table, K=8)
        self.assertLess(r["regress"]["mae_all"], 1e-3)

    def test_bad_table_raises(self):
        with self.assertRaises(posemb.Error):
            posemb.analyze(np.zeros(10))
        with self.assertRaises(posemb.Error) as e:
            posemb.analyze(np.zeros((1, 4)))
        self.assertIn("at least 2 rows", str(e.exception))


@unittest.skipUnless(os.path.isdir(GOLDEN), "needs ../shared/golden")
class TestModel(unittest.TestCase):
    def check_case(self, case):
        folder = os.path.join(GOLDEN, case)
        with open(os.path.join(folder, "inputs.json")) as f:
            inputs = json.load(f)
        want = read_safetensors(os.path.join(folder, "expected.safetensors"))
        with posemb.Model(folder) as m:
            out = m.forward(inputs["input_ids"], inputs["attention_mask"], inputs.get("token_type_ids"))
        scale = np.abs(want["last_hidden_state"]).max()
        mask = np.array(inputs["attention_mask"], dtype=bool)  # HF's padded rows are not compared
        err = np.abs(out["last_hidden_state"] - want["last_hidden_state"])[mask].max()
        self.assertLess(err, 1e-5 * scale)
        self.assertEqual(len(out["hidden_states"]), m.config["layers"] + 1)
        for l, a in enumerate(out["attentions"]):
            self.assertLess(np.abs(a - want["attentions.%d" % l]).max(), 1e-5)
        return out, want

    def test_bert_relative_key_matches_hf(self):
        out, want = self.check_case("bert_relk")
        self.assertLess(np.abs(out["pooler_output"] - want["pooler_output"]).max(), 1e-5)

    def test_gpt2_matches_hf(self):
        self.check_case("gpt2")

    def test_lm_logits_are_the_tied_product(self):
        with tempfile.TemporaryDirectory() as d:
            shutil.copy(os.path.join(GOLDEN, "gpt2", "model.safetensors"), d)
            with open(os.path.join(GOLDEN, "gpt2", "config.json")) as f:
                cfg = json.load(f)
            cfg["architectures"] = ["GPT2LMHeadModel"]
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
            wte = read_safetensors(os.path.join(d, "model.safetensors"))["wte.weight"]
            with posemb.Model(d) as m:
                out = m.forward([[5, 17, 42, 199]])
        want = out["last_hidden_state"] @ wte.T
        self.assertEqual(out["logits"].shape, (1, 4, 200))
        self.assertLess(np.abs(out["logits"] - want).max(), 1e-4 * np.abs(want).max())

    def test_errors(self):
        with self.assertRaises(posemb.Error) as e:
            posemb.Model("/nonexistent/model")
        self.assertIn("/nonexistent/model", str(e.exception))
        with posemb.Model(os.path.join(GOLDEN, "gpt2")) as m:
            with self.assertRaises(posemb.Error) as e:
                m.forward([[5, 300]])  # vocabulary of 200
            self.assertIn("300", str(e.exception))


if __name__ == "__main__":
    unittest.main(verbosity=1)
