"""The Python module (python/posemb) against the CLI and Hugging Face.

Run by ctest with POSEMB_LIBRARY (the built libposemb.so), POSEMB_BIN (the
CLI), POSEMB_SHARED (../shared; the parity cases skip without it) and
PYTHONPATH=python. Needs numpy (Debian: python3-numpy)."""
import contextlib
import json
import math
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


# The CLI under this process's BLAS kernels: the products' rounding, and so the
# last digits, depend on them, and the CLI would otherwise take the CPU's own
# where OpenBLAS does not know the CPU (posemb/blas.h).
SAME_KERNELS = dict(os.environ, OPENBLAS_CORETYPE=posemb.blas_core())


def cli(*args):
    subprocess.run([BIN, *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=SAME_KERNELS)


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
        self.assertEqual(posemb.pe_spec("stickbreaking", dim=16, causal=True), "stickbreaking:current=off")
        self.assertEqual(posemb.pe_matrices("stickbreaking", 8, 16, heads=2, causal=True), {})  # data-dependent
        t = posemb.pe_matrices("pope", length=6, dim=16, heads=2)  # PoPE: d = 8 frequencies, delta at 0
        self.assertAlmostEqual(float(t["pope_frequencies"][0, 1]), 10000 ** (-1 / 8), places=6)
        self.assertAlmostEqual(float(t["kernel"][2, 2]), 8.0, places=5)
        self.assertEqual(posemb.pe_spec("path", dim=16, causal=True), "path:rank=32")
        self.assertEqual(posemb.pe_spec("random:max=64+ape", dim=16, max_len=64),
                         "ape:integration=add+random:max=64")
        # DroPE's temperature by sequence length; 2D RoPE's kernel over a grid 4 wide depends on the offset alone
        t = posemb.pe_matrices("drope:c=0.5,original=4", length=8, dim=16, heads=2, causal=True)
        self.assertAlmostEqual(float(t["logit_factor"][7, 0]), 1 + 0.5 * np.log(2), places=6)
        self.assertAlmostEqual(float(t["logit_factor"][3, 0]), 1.0, places=7)
        k = posemb.pe_matrices("rope2d:grid=4", length=12, dim=32, heads=2)["kernel"]
        self.assertAlmostEqual(float(k[5, 0]), float(k[10, 5]), places=5)  # one patch right, one row down
        self.assertAlmostEqual(float(k[0, 0]), 8.0, places=5)  # d/2 pairs at offset 0

    def test_blas_core_is_the_clis(self):
        version = subprocess.run([BIN, "--version"], check=True, capture_output=True, text=True,
                                 env=SAME_KERNELS).stdout
        self.assertRegex(version, r"\(OpenBLAS's %s kernels; small products: (OpenBLAS|libxsmm [0-9.]+)\)"
                         % posemb.blas_core())

    def test_struct_layouts_are_the_librarys(self):
        import ctypes
        for name, cls in posemb._MIRRORED.items():
            self.assertEqual(ctypes.sizeof(cls), posemb._struct_size(name.encode()), name)
        self.assertEqual(posemb._struct_size(b"no_such_struct"), 0)
        short = type("Short", (ctypes.Structure,), {"_fields_": posemb._AnalyzeOpts._fields_[:-2]})
        saved = posemb._MIRRORED["posemb_analyze_opts"]
        posemb._MIRRORED["posemb_analyze_opts"] = short  # a binding of an older library
        try:
            with self.assertRaisesRegex(posemb.Error, "posemb_analyze_opts is %d bytes in" % ctypes.sizeof(saved)):
                posemb._check_layouts()
        finally:
            posemb._MIRRORED["posemb_analyze_opts"] = saved

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


def write_safetensors(path, tensors):
    """Writes {name: float32 (or bool) array} as a .safetensors file, from the format's definition."""
    header, blobs, at = {}, [], 0
    for name, a in tensors.items():
        boolean = a.dtype == np.bool_  # HF's causal-mask buffers
        b = np.ascontiguousarray(a, dtype=np.bool_ if boolean else np.float32).tobytes()
        header[name] = {"dtype": "BOOL" if boolean else "F32", "shape": list(a.shape), "data_offsets": [at, at + len(b)]}
        blobs.append(b)
        at += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def hf_rope(cfg, d, T):
    """RoPE's inverse frequencies and attention factor for a sequence of T tokens, as
    modeling_rope_utils.py computes them for each rope_scaling type (default, linear,
    dynamic, llama3, longrope, proportional), written out here from HF's definitions
    (proportional: _compute_proportional_rope_parameters of a transformers 5 modeling_rope_utils.py,
    the one with standardize_rope_params, read through the search index, which kept no commit)."""
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    base = cfg.get("rope_theta", rs.get("rope_theta"))
    kind = rs.get("rope_type", rs.get("type", "default"))
    expo = np.arange(0, d, 2) / d
    inv, att = 1.0 / base ** expo, 1.0
    if kind == "linear":
        inv = inv / rs["factor"]
    elif kind == "dynamic" and T > cfg["max_position_embeddings"]:  # NTK base grown with the length
        L0, f = cfg["max_position_embeddings"], rs["factor"]
        inv = 1.0 / (base * ((f * T / L0) - (f - 1)) ** (d / (d - 2))) ** expo
    elif kind == "llama3":
        f, lo, hi, L0 = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        wavelen = 2 * np.pi / inv
        scaled = np.where(wavelen > L0 / lo, inv / f, inv)
        smooth = (L0 / wavelen - lo) / (hi - lo)
        medium = ~(wavelen < L0 / hi) & ~(wavelen > L0 / lo)
        inv = np.where(medium, (1 - smooth) * scaled / f + smooth * scaled, scaled)
    elif kind == "proportional":  # _compute_proportional_rope_parameters: the first pairs over the whole head
        prf = cfg.get("partial_rotary_factor", rs.get("partial_rotary_factor", 1.0))
        angles = int(prf * d // 2)
        inv = np.concatenate([1.0 / base ** (np.arange(0, 2 * angles, 2) / d), np.zeros(d // 2 - angles)])
        inv = inv / rs.get("factor", 1.0)
    elif kind == "longrope":
        L0 = cfg.get("original_max_position_embeddings", cfg["max_position_embeddings"])
        f = cfg["max_position_embeddings"] / L0 if "original_max_position_embeddings" in cfg else rs["factor"]
        att = rs.get("attention_factor") or (1.0 if f <= 1 else np.sqrt(1 + np.log(f) / np.log(L0)))
        inv = 1.0 / (np.array(rs["long_factor"] if T > L0 else rs["short_factor"]) * base ** expo)
    return inv, att


def hf_mrope(cfg, pos3, inv, interleave=None):
    """The rotation angles [T, d] of M-RoPE for position ids pos3 [3, T], written out from HF's code:
    Qwen2-VL's apply_multimodal_rotary_pos_emb (transformers 928b5565ecea, modeling_qwen2_vl.py):
    emb = cat(freqs, freqs) per axis, split into mrope_section * 2 chunks, chunk i from axis i % 3;
    Qwen3-VL's Qwen3VLTextRotaryEmbedding (transformers 00709b862bb8, modeling_qwen3_vl.py):
    apply_interleaved_mrope on freqs [3, T, d/2], then cat(freqs, freqs). interleave: the other
    model_type's layout when given (a model HF does not run, to show the two differ)."""
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    freqs = np.asarray(pos3, dtype=np.float64)[:, :, None] * inv[None, None, :]  # [3, T, d/2]
    if interleave if interleave is not None else cfg["model_type"] == "qwen3_vl_text":
        section = rs.get("mrope_section", [24, 20, 20])
        freqs_t = freqs[0].copy()
        for dim, offset in enumerate((1, 2), start=1):
            idx = slice(offset, section[dim] * 3, 3)
            freqs_t[..., idx] = freqs[dim, ..., idx]
        return np.concatenate([freqs_t, freqs_t], -1)
    emb = np.concatenate([freqs, freqs], -1)
    cuts = np.cumsum(rs["mrope_section"] * 2)[:-1]
    return np.concatenate([m[i % 3] for i, m in enumerate(np.split(emb, cuts, -1))], -1)


def neox_rotary(x, cos, sin):
    """HF's apply_rotary_pos_emb as modeling_gpt_neox.py has it (transformers
    fbc883091da8): the first r = cos's width dims rotate with rotate_half
    inside them, the rest pass; at r = d it is modeling_llama.py's."""
    r = cos.shape[-1]
    xr, xp = x[..., :r], x[..., r:]
    half = np.concatenate([-xr[..., r // 2:], xr[..., :r // 2]], -1)
    return np.concatenate([xr * cos + half * sin, xp], -1)


def llama_reference(w, cfg, ids, pos=None, rope_inv=None, windows=None, local=None, length=None, nope=(),
                    interleave=None):
    """HF's LlamaModel forward in float64 numpy (modeling_llama.py's
    equations: RMSNorm, rotate_half RoPE, grouped-query attention, SwiGLU),
    a second implementation for posemb's; pos: position_ids (default
    0..T-1), whose max + 1 is the length HF's dynamic scaling reads;
    rope_inv(cfg, d, T): other inverse frequencies than hf_rope's (fewer
    than d/2 rotate the first dims only, as GPT-NeoX's); windows: per layer,
    None or W, query i seeing keys i - W < j <= i (transformers' masking_utils.py
    sliding_window_overlay, kv_idx > q_idx - W); local: (base, layers), those layers'
    RoPE at that base unscaled, as Gemma 3's local layers (rope_local_base_freq); length: the
    length dynamic scaling reads (HF: the batch's max(position_ids) + 1), default this row's; nope:
    the layers that do not rotate (SmolLM3's no_rope_layers[l] = 0). For qwen2_vl_text and
    qwen3_vl_text pos may be [3, T] (temporal, height, width), rotated as hf_mrope does (interleave:
    its argument)."""
    H, KV, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, T = cfg["rms_norm_eps"], len(ids)
    pos = np.arange(T) if pos is None else np.asarray(pos)
    vl = cfg["model_type"] in ("qwen2_vl_text", "qwen3_vl_text")
    if vl and pos.ndim == 1:
        pos = np.stack([pos] * 3)  # HF's text: every axis the same id
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * g

    def tables(inv, att):
        if vl:
            emb = hf_mrope(cfg, pos, inv, interleave)
            return att * np.cos(emb), att * np.sin(emb)
        ang = np.outer(pos, inv)
        return att * np.cos(np.concatenate([ang, ang], 1)), att * np.sin(np.concatenate([ang, ang], 1))

    glob = tables(*(rope_inv or hf_rope)(cfg, d, length or int(pos.max()) + 1))
    loc = tables(1.0 / local[0] ** (np.arange(0, d, 2) / d), 1.0) if local else None

    def lin(x, name):  # x W^T + b, the bias when the checkpoint has one
        return x @ w[name + ".weight"].T + w.get(name + ".bias", 0.0)

    def rope(x, l):  # [heads, T, d]
        return x if l in nope else neox_rotary(x, *(loc if local and l in local[1] else glob))

    h = w["model.embed_tokens.weight"][ids]
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        a = rms(h, w[p + "input_layernorm.weight"])
        q, k = lin(a, p + "self_attn.q_proj").reshape(T, H, d), lin(a, p + "self_attn.k_proj").reshape(T, KV, d)
        if cfg["model_type"] in ("qwen3", "qwen3_vl_text"):  # each head RMS-normalised before RoPE
            q, k = rms(q, w[p + "self_attn.q_norm.weight"]), rms(k, w[p + "self_attn.k_norm.weight"])
        q, k = rope(q.transpose(1, 0, 2), l), rope(k.transpose(1, 0, 2), l)
        v = lin(a, p + "self_attn.v_proj").reshape(T, KV, d).transpose(1, 0, 2)
        k, v = np.repeat(k, H // KV, 0), np.repeat(v, H // KV, 0)
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d) + np.triu(np.full((T, T), -np.inf), 1)
        W = windows[l] if windows else None
        if W:
            s = s + np.tril(np.full((T, T), -np.inf), -W)
        s = np.exp(s - s.max(-1, keepdims=True))
        z = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, H * d)
        h = h + lin(z, p + "self_attn.o_proj")
        a = rms(h, w[p + "post_attention_layernorm.weight"])
        g, u = lin(a, p + "mlp.gate_proj"), lin(a, p + "mlp.up_proj")
        h = h + lin(g / (1 + np.exp(-g)) * u, p + "mlp.down_proj")
    return rms(h, w["model.norm.weight"])


class TestLlamaReference(unittest.TestCase):
    """posemb.Model against numpy; needs no ../shared."""

    @staticmethod
    def llama_weights(cfg, biases):
        """Random weights of the tiny Llama these tests write (width 32, 4 heads of 12, 2 kv heads)."""
        D, A, KVd, I = 32, 4 * 12, 2 * 12, 40
        rng = np.random.default_rng(5)
        shapes = {"model.embed_tokens.weight": (50, D), "model.norm.weight": (D,)}
        for l in range(2):
            p = "model.layers.%d." % l
            shapes.update({p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,),
                           p + "self_attn.q_proj.weight": (A, D), p + "self_attn.k_proj.weight": (KVd, D),
                           p + "self_attn.v_proj.weight": (KVd, D), p + "self_attn.o_proj.weight": (D, A),
                           p + "mlp.gate_proj.weight": (I, D), p + "mlp.up_proj.weight": (I, D),
                           p + "mlp.down_proj.weight": (D, I)})
            if cfg["model_type"] == "qwen3":
                shapes.update({p + "self_attn.q_norm.weight": (12,), p + "self_attn.k_norm.weight": (12,)})
            if biases:
                shapes.update({p + "self_attn.q_proj.bias": (A,), p + "self_attn.k_proj.bias": (KVd,),
                               p + "self_attn.v_proj.bias": (KVd,), p + "self_attn.o_proj.bias": (D,),
                               p + "mlp.gate_proj.bias": (I,), p + "mlp.up_proj.bias": (I,),
                               p + "mlp.down_proj.bias": (D,)})
        return {k: (1 + 0.1 * rng.standard_normal(s) if k.endswith("norm.weight") else 0.3 * rng.standard_normal(s))
                .astype(np.float32) for k, s in shapes.items()}

    def check_llama(self, cfg, biases, pe="rope:base=1000"):
        """A Llama folder written here with random weights: posemb against the numpy reference above."""
        w = self.llama_weights(cfg, biases)
        ids = [3, 41, 7, 7, 19, 0, 33, 12, 5]
        with tempfile.TemporaryDirectory() as d:
            write_safetensors(os.path.join(d, "model.safetensors"), w)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
            with posemb.Model(d) as m:
                out = m.forward([ids])
                self.assertEqual((m.config["head_dim"], m.config["kv_heads"]), (12, 2))
                self.assertTrue(m.config["pe"].startswith(pe), m.config["pe"])
                self.assertEqual(m.config["model_type"], cfg["model_type"].encode())
                self.assertEqual((m.config["attn_out_bias"], m.config["mlp_bias"]), (biases, biases))
        want = llama_reference(w, cfg, ids)
        err = np.abs(out["last_hidden_state"][0] - want).max()
        self.assertLess(err, 1e-5 * np.abs(want).max())

    def test_llama_head_dim_and_biases_match_numpy(self):
        """A head_dim that is not hidden / heads (as Mistral-Nemo's), grouped-query;
        then HF Llama's attention_bias (q, k, v and o) and mlp_bias."""
        cfg = {"model_type": "mistral", "architectures": ["MistralModel"], "vocab_size": 50, "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
               "intermediate_size": 40, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
               "rope_theta": 1000.0, "hidden_act": "silu", "tie_word_embeddings": False}
        self.check_llama(cfg, 0)
        cfg.update(model_type="llama", architectures=["LlamaModel"], attention_bias=True, mlp_bias=True)
        self.check_llama(cfg, 1)

    def test_rope_scalings_match_numpy(self):
        """rope_scaling as HF's config.json states it, read into posemb's rope spec, against
        HF's frequency rules written out above: llama3 with its smoothed band (base 50 puts
        wavelengths on both sides of it), longrope with Phi-3's top-level
        original_max_position_embeddings (its long factors past it, the attention factor
        from max/original) and without it (short factors, rope_scaling's factor). (dynamic
        acts past max_position_embeddings: test_dynamic_rope_past_max_position.)"""
        base = {"model_type": "llama", "architectures": ["LlamaModel"], "vocab_size": 50, "hidden_size": 32,
                "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
                "intermediate_size": 40, "max_position_embeddings": 6, "rms_norm_eps": 1e-6,
                "rope_theta": 1000.0, "hidden_act": "silu", "tie_word_embeddings": False}
        cases = [{"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                  "rope_theta": 50.0, "max_position_embeddings": 16},
                 {"rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.1, 1.3, 1.7, 2.2, 3.0],
                                   "long_factor": [1.5, 2.0, 3.0, 5.0, 8.0, 13.0]},
                  "max_position_embeddings": 32, "original_max_position_embeddings": 4},
                 {"rope_scaling": {"type": "longrope", "factor": 4.0, "short_factor": [1.0, 1.1, 1.3, 1.7, 2.2, 3.0],
                                   "long_factor": [1.5, 2.0, 3.0, 5.0, 8.0, 13.0]},
                  "max_position_embeddings": 32}]
        for case in cases:
            cfg = dict(base, **case)
            with self.subTest(rope_scaling=cfg["rope_scaling"]):
                self.check_llama(cfg, 0, "rope:base=%g,scaling=" % cfg["rope_theta"])

    def test_dynamic_rope_past_max_position(self):
        """rope_scaling dynamic end to end: a Llama folder with max_position_embeddings 6 and a
        tokenizer.json, `posemb perplexity --lengths 16` (past 6, where dynamic NTK grows the
        base with the length) against the numpy reference's loss with HF's dynamic rule."""
        cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 50, "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
               "intermediate_size": 40, "max_position_embeddings": 6, "rms_norm_eps": 1e-6,
               "rope_theta": 1000.0, "hidden_act": "silu", "tie_word_embeddings": True,
               "rope_scaling": {"type": "dynamic", "factor": 2.0}}
        w = self.llama_weights(cfg, 0)
        ids = [3, 41, 7, 7, 19, 0, 33, 12, 5, 44, 8, 23, 16, 2, 30, 11]
        got, out = perplexity_of(cfg, w, ids)
        h = llama_reference(w, cfg, ids).astype(np.float64)
        logits = h @ w["model.embed_tokens.weight"].astype(np.float64).T
        logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - \
            logits.max(-1, keepdims=True)
        nll = -np.mean([logp[t, ids[t + 1]] for t in range(len(ids) - 1)])
        self.assertEqual((got["context"], got["tokens"]), (16, 15), out)
        self.assertLess(abs(np.log(got["perplexity"]) - nll), 1e-5 * nll, (got, nll))
        # the same model without the scaling is another model past 6 tokens: the check can fail
        plain = dict(cfg, rope_scaling=None)
        h0 = llama_reference(w, plain, ids) @ w["model.embed_tokens.weight"].astype(np.float64).T
        self.assertGreater(np.abs(h0 - logits).max(), 1e-2)

    def run_llama(self, cfg, ids, position_ids=None):
        """posemb.Model.forward's last hidden state on a folder of the tiny Llama's weights under cfg."""
        w = self.llama_weights(cfg, 0)
        with tempfile.TemporaryDirectory() as d:
            write_safetensors(os.path.join(d, "model.safetensors"), w)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
            with posemb.Model(d) as m:
                return w, m.forward([ids], position_ids=None if position_ids is None else [position_ids])

    def llama_cfg(self, **kw):
        cfg = {"model_type": "llama", "architectures": ["LlamaModel"], "vocab_size": 50, "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
               "intermediate_size": 40, "max_position_embeddings": 8, "rms_norm_eps": 1e-6,
               "rope_theta": 1000.0, "hidden_act": "silu", "tie_word_embeddings": False}
        cfg.update(kw)
        return cfg

    IDS = [3, 41, 7, 7, 19, 0, 33, 12, 5, 44, 8, 23, 16, 2, 30, 11, 9, 27, 40, 1]

    def assert_matches(self, got, want, what):
        err = np.abs(got - want).max() / np.abs(want).max()
        print("%s: max |posemb - numpy| / max |numpy| = %.2e" % (what, err), file=sys.stderr)
        self.assertLess(err, 1e-5, what)

    def test_past_max_position_matches_numpy(self):
        """20 tokens through a Llama whose max_position_embeddings is 8 (refused before issue 53):
        RoPE and dynamic NTK, whose base grows to HF's base * (2 * 20/8 - 1)^(12/10) at this
        length, against the numpy reference; the two differ, so the check can fail."""
        outs = {}
        for name, scaling in (("rope", None), ("dynamic", {"rope_type": "dynamic", "factor": 2.0})):
            cfg = self.llama_cfg(rope_scaling=scaling)
            w, out = self.run_llama(cfg, self.IDS)
            outs[name] = out["last_hidden_state"][0]
            self.assert_matches(outs[name], llama_reference(w, cfg, self.IDS), "%s at 20 tokens, max 8" % name)
        self.assertGreater(np.abs(outs["rope"] - outs["dynamic"]).max(), 1e-2)

    def test_position_ids_match_numpy(self):
        """position_ids reach RoPE as HF's: an offset (5 + arange) and two packed documents whose
        positions restart, with dynamic NTK (its length max(position_ids) + 1, past 8) and
        without; plain RoPE is relative, so the offset leaves its output as it is."""
        offset = [5 + t for t in range(len(self.IDS))]
        packed = list(range(12)) + list(range(8))
        for scaling in (None, {"rope_type": "dynamic", "factor": 2.0}):
            cfg = self.llama_cfg(rope_scaling=scaling)
            _, plain = self.run_llama(cfg, self.IDS)
            for name, pos in (("offset", offset), ("packed", packed)):
                w, out = self.run_llama(cfg, self.IDS, pos)
                got = out["last_hidden_state"][0]
                self.assert_matches(got, llama_reference(w, cfg, self.IDS, pos),
                                    "%s position_ids, %s" % (name, scaling and "dynamic" or "rope"))
                moved = np.abs(got - plain["last_hidden_state"][0]).max()
                if name == "offset" and scaling is None:
                    self.assertLess(moved, 1e-5)
                else:
                    self.assertGreater(moved, 1e-3, (name, scaling))
        # a batch: HF's dynamic base comes from the whole batch's max(position_ids) + 1 (20 here),
        # also for the packed row whose own largest position is 11
        cfg = self.llama_cfg(rope_scaling={"rope_type": "dynamic", "factor": 2.0})
        w = self.llama_weights(cfg, 0)
        with model_folder(cfg, w) as m:
            out = m.forward([self.IDS, self.IDS], position_ids=[list(range(20)), packed])["last_hidden_state"]
        self.assert_matches(out[1], llama_reference(w, cfg, self.IDS, packed, length=20),
                            "packed row of a batch, dynamic at the batch's length")
        self.assertGreater(np.abs(out[1] - llama_reference(w, cfg, self.IDS, packed)).max(), 1e-3)
        with self.assertRaises(posemb.Error) as e:
            self.run_llama(self.llama_cfg(), self.IDS, [-1] + offset[1:])
        self.assertIn("position_ids", str(e.exception))

    def test_qwen3_matches_numpy(self):
        """Qwen3: q_norm and k_norm on every head before RoPE (HF's Qwen3Attention), grouped-query,
        tied embeddings."""
        cfg = {"model_type": "qwen3", "architectures": ["Qwen3Model"], "vocab_size": 50, "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
               "intermediate_size": 40, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
               "rope_theta": 1000.0, "hidden_act": "silu", "tie_word_embeddings": True, "attention_bias": False,
               "use_sliding_window": False}
        self.check_llama(cfg, 0)  # its sliding windows: TestSlidingWindows


def perplexity_of(cfg, w, ids):
    """`posemb perplexity --lengths len(ids) --json` on a folder of cfg, w and a 50-letter tokenizer,
    over the text that tokenizes to ids: its last JSON line, and the whole output."""
    letters = [chr(ord("a") + i) for i in range(26)] + [chr(ord("A") + i) for i in range(24)]
    tok = {"model": {"type": "BPE", "vocab": {c: i for i, c in enumerate(letters)}, "merges": []}}
    with tempfile.TemporaryDirectory() as d:
        write_safetensors(os.path.join(d, "model.safetensors"), w)
        for name, obj in (("config.json", cfg), ("tokenizer.json", tok)):
            with open(os.path.join(d, name), "w") as f:
                json.dump(obj, f)
        with open(os.path.join(d, "text.txt"), "w") as f:
            f.write("".join(letters[i] for i in ids))
        out = subprocess.run([BIN, "perplexity", d, "--data", os.path.join(d, "text.txt"), "--lengths",
                              str(len(ids)), "--json"], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1]), out


@contextlib.contextmanager
def model_folder(cfg, w):
    """posemb.Model of a temporary folder holding cfg as config.json and w as model.safetensors."""
    with tempfile.TemporaryDirectory() as d:
        write_safetensors(os.path.join(d, "model.safetensors"), w)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        with posemb.Model(d) as m:
            yield m


def train_one_step(cfg, w, ids=None, pe=None, spec_back=None):
    """`posemb train --model llama --init` (one step, a 50-letter tokenizer; --pe pe when given) on a
    folder of cfg and w: the config.json and weights it writes, and (ids given) Model.forward of that
    folder; spec_back (a list) gets the PE spec the written folder reads back as."""
    letters = [chr(ord("a") + i) for i in range(26)] + [chr(ord("A") + i) for i in range(24)]
    tok = {"model": {"type": "BPE", "vocab": {c: i for i, c in enumerate(letters)}, "merges": []}}
    with tempfile.TemporaryDirectory() as d:
        init, out = os.path.join(d, "init"), os.path.join(d, "run")
        os.mkdir(init)
        write_safetensors(os.path.join(init, "model.safetensors"), w)
        for name, obj in (("config.json", cfg), ("tokenizer.json", tok)):
            with open(os.path.join(init, name), "w") as f:
                json.dump(obj, f)
        with open(os.path.join(d, "text.txt"), "w") as f:
            f.write("".join(letters[(i * 7) % 50] for i in range(3000)))
        r = subprocess.run([BIN, "train", "--model", "llama", "--init", init, "--data", os.path.join(d, "text.txt"),
                            "--out", out, "--seq-len", "16", "--batch-size", "2", "--steps", "1", "--threads", "1"]
                           + (["--pe", pe] if pe else []), capture_output=True, text=True)
        if r.returncode:
            raise AssertionError("posemb train: " + r.stderr)
        with open(os.path.join(out, "config.json")) as f:
            saved = json.load(f)
        trained = read_safetensors(os.path.join(out, "model.safetensors"))
        if spec_back is not None:
            with posemb.Model(out) as m:
                spec_back.append(m.config["pe"])
        if ids is None:
            return saved, trained, None
        with posemb.Model(out) as m:
            return saved, trained, m.forward([ids])


class TestSlidingWindows(unittest.TestCase):
    """Sliding-window attention as transformers reads it from config.json, against
    llama_reference's window mask (masking_utils.py: query i sees keys i - W < j <= i,
    W tokens). Older transformers' eager mask (_make_causal_mask with
    diagonal = past_key_values_length - sliding_window - 1) kept W + 1 tokens; the test
    shows that form differs here, so the check can tell the two apart."""

    @staticmethod
    def weights(cfg):
        """The tiny Llama's weights; Qwen2's with its q, k and v biases (and no others)."""
        if cfg["model_type"] != "qwen2":
            return TestLlamaReference.llama_weights(cfg, 0)
        return {k: v for k, v in TestLlamaReference.llama_weights(cfg, 1).items()
                if k.endswith("weight") or k.split(".")[-2] in ("q_proj", "k_proj", "v_proj")}

    def forward(self, cfg):
        w = self.weights(cfg)
        with model_folder(cfg, w) as m:
            got = m.forward([TestLlamaReference.IDS])["last_hidden_state"][0]
            windows = [m.config["sliding_window"] if m.config["sliding_layers"][l // 8] >> (l % 8) & 1 else None
                       for l in range(cfg["num_hidden_layers"])]
        return w, got, windows

    def check(self, cfg, want_windows, what):
        w, got, windows = self.forward(cfg)
        self.assertEqual(windows, want_windows, what)
        want = llama_reference(w, cfg, TestLlamaReference.IDS, windows=want_windows)
        err = np.abs(got - want).max() / np.abs(want).max()
        print("sliding windows, %s: max |posemb - numpy| / max |numpy| = %.2e" % (what, err), file=sys.stderr)
        self.assertLess(err, 1e-5, what)
        return w, got

    def test_mistral_qwen_and_layer_types_match_numpy(self):
        base = TestLlamaReference().llama_cfg(max_position_embeddings=64)
        mistral = dict(base, model_type="mistral", architectures=["MistralModel"], sliding_window=5)
        w, got = self.check(mistral, [5, 5], "mistral, every layer, W 5 of 20 tokens")
        full = llama_reference(w, mistral, TestLlamaReference.IDS)
        old = llama_reference(w, mistral, TestLlamaReference.IDS, windows=[6, 6])  # W + 1 tokens
        self.assertGreater(np.abs(got - full).max(), 1e-2)
        self.assertGreater(np.abs(got - old).max(), 1e-3)
        # MistralConfig's default window (4096) when the key is absent; null: none
        self.assertEqual(self.forward(dict(mistral, sliding_window=None))[2], [None, None])
        self.assertEqual(self.forward({k: v for k, v in mistral.items() if k != "sliding_window"})[2], [4096, 4096])
        qwen2 = dict(base, model_type="qwen2", architectures=["Qwen2Model"], use_sliding_window=True,
                     sliding_window=4, max_window_layers=1)
        self.check(qwen2, [None, 4], "qwen2, layers from max_window_layers 1, W 4")
        self.assertEqual(self.forward(dict(qwen2, use_sliding_window=False))[2], [None, None])
        qwen3 = dict(base, model_type="qwen3", architectures=["Qwen3Model"], sliding_window=3,
                     layer_types=["sliding_attention", "full_attention"])
        self.check(qwen3, [3, None], "qwen3, layer_types, W 3")

    def test_gemma3_attention_pattern_matches_numpy(self):
        """Gemma 3's pattern on a Llama body: layer 0 slides (W 4) and rotates at the local
        base 10000 unscaled (rope:local_base=,local_layers=), layer 1 attends to all at base 1e6
        with linear scaling 8, as Gemma 3's rope_local_base_freq and rope_theta with rope_scaling
        set them; against numpy, and different from the model without the local base."""
        base = TestLlamaReference().llama_cfg(max_position_embeddings=64, model_type="qwen3",
                                              architectures=["Qwen3Model"], sliding_window=4,
                                              layer_types=["sliding_attention", "full_attention"])
        spec = "rope:base=1000000,scaling=linear,factor=8,local_base=10000,local_layers=0"
        cfg = dict(base, posemb_pe=spec, rope_theta=1e6, rope_scaling={"rope_type": "linear", "factor": 8.0})
        w, got, windows = self.forward(cfg)
        self.assertEqual(windows, [4, None])
        want = llama_reference(w, cfg, TestLlamaReference.IDS, windows=windows, local=(10000.0, [0]))
        err = np.abs(got - want).max() / np.abs(want).max()
        print("gemma3's local/global RoPE and windows: max |posemb - numpy| / max |numpy| = %.2e" % err,
              file=sys.stderr)
        self.assertLess(err, 1e-5)
        plain = llama_reference(w, cfg, TestLlamaReference.IDS, windows=windows)
        self.assertGreater(np.abs(got - plain).max(), 1e-3)

    def test_bad_windows_refused(self):
        base = TestLlamaReference().llama_cfg(model_type="mistral", architectures=["MistralModel"])
        for kw, msg in (({"layer_types": ["sliding_attention"]}, "one type for each of the 2 layers"),
                        ({"layer_types": ["sliding_attention", "chunked_attention"]}, "layer_types\\[1\\]"),
                        ({"sliding_window": None, "layer_types": ["sliding_attention", "full_attention"]},
                         "sliding_window is null"),
                        ({"sliding_window": 0}, "sliding_window")):
            cfg = dict(base, **kw)
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "config.json"), "w") as f:
                    json.dump(cfg, f)
                with self.assertRaisesRegex(posemb.Error, "config.json: .*" + msg):
                    posemb.Model(d)

    def test_windows_written_back(self):
        """posemb train --init on a Qwen2 folder with windows writes them as HF reads them:
        layer_types (transformers 4.53+) and use_sliding_window with max_window_layers (older)."""
        cfg = TestLlamaReference().llama_cfg(model_type="qwen2", architectures=["Qwen2ForCausalLM"], vocab_size=50,
                                             use_sliding_window=True, sliding_window=4, max_window_layers=1,
                                             max_position_embeddings=64)
        saved, _, _ = train_one_step(cfg, self.weights(cfg))
        self.assertEqual((saved["sliding_window"], saved["layer_types"], saved["use_sliding_window"],
                          saved["max_window_layers"]), (4, ["full_attention", "sliding_attention"], True, 1))


def gemma3_reference(w, cfg, ids):
    """HF's Gemma3ForCausalLM forward in float64 numpy, from modeling_gemma3.py of transformers
    0018aa647bb1 (search index): embeddings times float32(sqrt(hidden)), RMSNorm times 1 + w,
    q_norm and k_norm on each head before RoPE, RoPE at rope_theta with rope_scaling on the
    global layers and at rope_local_base_freq on the sliding ones, q.k times
    query_pre_attn_scalar^-1/2, the sliding window (kv_idx > q_idx - W), norms after attention
    and after the MLP, GeGLU with tanh GELU, tied embeddings. Layer types: layer_types, else
    sliding_window_pattern. Returns (last hidden state, logits)."""
    H, KV, d, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["hidden_size"]
    eps, T, L = cfg["rms_norm_eps"], len(ids), cfg["num_hidden_layers"]
    types = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % cfg.get("sliding_window_pattern", 6)
                                       else "full_attention" for i in range(L)]
    rp = cfg.get("rope_parameters")
    glob = rp["full_attention"] if rp else dict(cfg.get("rope_scaling") or {}, rope_theta=cfg["rope_theta"])
    local = rp["sliding_attention"]["rope_theta"] if rp else cfg["rope_local_base_freq"]
    w = {k: v.astype(np.float64) for k, v in w.items()}
    pos, expo = np.arange(T), np.arange(0, d, 2) / d

    def tables(inv):
        ang = np.outer(pos, inv)
        return np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))

    inv = 1.0 / glob["rope_theta"] ** expo
    if glob.get("rope_type", glob.get("type")) == "linear":
        inv = inv / glob["factor"]
    rope = {"full_attention": tables(inv), "sliding_attention": tables(1.0 / local ** expo)}

    def rms(x, g):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * (1.0 + g)

    def gelu_tanh(x):
        return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))

    h = w["model.embed_tokens.weight"][ids] * float(np.float32(np.sqrt(D)))
    for l in range(L):
        p = "model.layers.%d." % l
        a = rms(h, w[p + "input_layernorm.weight"])
        q = rms((a @ w[p + "self_attn.q_proj.weight"].T).reshape(T, H, d), w[p + "self_attn.q_norm.weight"])
        k = rms((a @ w[p + "self_attn.k_proj.weight"].T).reshape(T, KV, d), w[p + "self_attn.k_norm.weight"])
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(T, KV, d).transpose(1, 0, 2)
        q, k = neox_rotary(q.transpose(1, 0, 2), *rope[types[l]]), neox_rotary(k.transpose(1, 0, 2), *rope[types[l]])
        k, v = np.repeat(k, H // KV, 0), np.repeat(v, H // KV, 0)
        s = q @ k.transpose(0, 2, 1) * cfg["query_pre_attn_scalar"] ** -0.5 + np.triu(np.full((T, T), -np.inf), 1)
        if types[l] == "sliding_attention":
            s = s + np.tril(np.full((T, T), -np.inf), -cfg["sliding_window"])
        s = np.exp(s - s.max(-1, keepdims=True))
        z = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, H * d)
        h = h + rms(z @ w[p + "self_attn.o_proj.weight"].T, w[p + "post_attention_layernorm.weight"])
        m = rms(h, w[p + "pre_feedforward_layernorm.weight"])
        f = gelu_tanh(m @ w[p + "mlp.gate_proj.weight"].T) * (m @ w[p + "mlp.up_proj.weight"].T)
        h = h + rms(f @ w[p + "mlp.down_proj.weight"].T, w[p + "post_feedforward_layernorm.weight"])
    h = rms(h, w["model.norm.weight"])
    return h, h @ w["model.embed_tokens.weight"].T


def numpy_forward(case, cfg):
    """case.weights(cfg) in a folder: the weights, Model.forward of TestLlamaReference.IDS, the PE spec."""
    w = case.weights(cfg)
    with model_folder(cfg, w) as m:
        return w, m.forward([TestLlamaReference.IDS]), m.config["pe"]


def numpy_check(case, cfg, what, label, reference):
    """Hidden states and logits of cfg's folder against reference (within 1e-5 of their scale);
    returns posemb's output and the PE spec it read."""
    w, out, spec = numpy_forward(case, cfg)
    h, logits = reference(w, cfg, TestLlamaReference.IDS)
    for name, got, want in (("hidden", out["last_hidden_state"][0], h), ("logits", out["logits"][0], logits)):
        err = np.abs(got - want).max() / np.abs(want).max()
        print("%s %s, %s: max |posemb - numpy| / max |numpy| = %.2e" % (label, what, name, err), file=sys.stderr)
        case.assertLess(err, 1e-5, (what, name))
    return out, spec


class TestGemma3(unittest.TestCase):
    """Gemma 3's text decoder (gemma3_text), a folder written here with random weights, against
    gemma3_reference; needs no ../shared."""

    CFG = {"model_type": "gemma3_text", "architectures": ["Gemma3ForCausalLM"], "vocab_size": 50,
           "hidden_size": 32, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 12, "intermediate_size": 40, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
           "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 16, "sliding_window": 5,
           "sliding_window_pattern": 3, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
           "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "final_logit_softcapping": None,
           "attn_logit_softcapping": None, "attention_bias": False, "tie_word_embeddings": True}

    @staticmethod
    def weights(cfg):
        D, I, d = cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"]
        A, KVd = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
        rng = np.random.default_rng(13)
        shapes = {"model.embed_tokens.weight": (cfg["vocab_size"], D), "model.norm.weight": (D,)}
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                      "post_feedforward_layernorm"):
                shapes[p + n + ".weight"] = (D,)
            shapes.update({p + "self_attn.q_proj.weight": (A, D), p + "self_attn.k_proj.weight": (KVd, D),
                           p + "self_attn.v_proj.weight": (KVd, D), p + "self_attn.o_proj.weight": (D, A),
                           p + "self_attn.q_norm.weight": (d,), p + "self_attn.k_norm.weight": (d,),
                           p + "mlp.gate_proj.weight": (I, D), p + "mlp.up_proj.weight": (I, D),
                           p + "mlp.down_proj.weight": (D, I)})
        return {k: ((0.2 if k.endswith("norm.weight") else 0.3) * rng.standard_normal(s)).astype(np.float32)
                for k, s in shapes.items()}

    def check(self, cfg, what):
        out, spec = numpy_check(self, cfg, what, "gemma3", gemma3_reference)
        return out["last_hidden_state"][0], spec

    def test_matches_numpy_in_both_config_forms(self):
        """transformers 4.5x's keys (rope_theta, rope_local_base_freq, rope_scaling,
        sliding_window_pattern 3: layers 0 and 1 slide) and transformers 5's (layer_types,
        rope_parameters per layer type) give the same model, matching numpy at 20 tokens
        (W 5); without the local base or the window the output moves, so the checks can fail."""
        a, spec = self.check(self.CFG, "4.5x keys")
        self.assertEqual(spec, "rope:base=1000000,scaling=linear,factor=8,local_base=10000,local_layers=0-1")
        v5 = {k: v for k, v in self.CFG.items()
              if k not in ("rope_theta", "rope_local_base_freq", "rope_scaling", "sliding_window_pattern")}
        v5.update(layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                  rope_parameters={"full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                                   "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})
        b, _ = self.check(v5, "transformers 5 keys")
        self.assertLess(np.abs(a - b).max(), 1e-6)
        w, out, _ = numpy_forward(self, dict(self.CFG, posemb_pe="rope:base=1000000,scaling=linear,factor=8"))
        self.assertGreater(np.abs(out["last_hidden_state"][0] - a).max(), 1e-3)
        w, out, _ = numpy_forward(self, dict(self.CFG, sliding_window=None))
        self.assertGreater(np.abs(out["last_hidden_state"][0] - a).max(), 1e-3)

    def test_train_save_load_round_trip(self):
        """posemb train --init on a Gemma 3 folder (1 step) writes what HF's Gemma3TextConfig
        reads: gemma3_text, hidden_activation, query_pre_attn_scalar, rope_theta with
        rope_scaling, rope_local_base_freq, sliding_window with layer_types, and no posemb_pe;
        read back, it matches numpy on the trained weights."""
        cfg, w, got = train_one_step(self.CFG, self.weights(self.CFG), TestLlamaReference.IDS)
        got = got["logits"][0]
        self.assertEqual((cfg["model_type"], cfg["architectures"], cfg["hidden_activation"]),
                         ("gemma3_text", ["Gemma3ForCausalLM"], "gelu_pytorch_tanh"))
        self.assertEqual((cfg["query_pre_attn_scalar"], cfg["rope_theta"], cfg["rope_local_base_freq"],
                          cfg["rope_scaling"]["factor"], cfg["sliding_window"]), (16.0, 1e6, 10000.0, 8.0, 5))
        self.assertEqual(cfg["layer_types"], ["sliding_attention", "sliding_attention", "full_attention"])
        self.assertNotIn("posemb_pe", cfg)
        self.assertNotIn("hidden_act", cfg)
        want = gemma3_reference(w, cfg, TestLlamaReference.IDS)[1]
        self.assertLess(np.abs(got - want).max() / np.abs(want).max(), 1e-5)

    def test_refusals(self):
        for kw, msg in (({"final_logit_softcapping": 30.0}, "final_logit_softcapping"),
                        ({"attn_logit_softcapping": 50.0}, "attn_logit_softcapping"),
                        ({"use_bidirectional_attention": True}, "use_bidirectional_attention"),
                        ({"hidden_activation": "gelu"}, "hidden_activation")):
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "config.json"), "w") as f:
                    json.dump(dict(self.CFG, **kw), f)
                with self.assertRaisesRegex(posemb.Error, "config.json: .*" + msg):
                    posemb.Model(d)


def llama4_reference(w, cfg, ids):
    """HF's Llama4ForCausalLM (text, dense layers: moe_layers []) in float64 numpy, from
    modeling_llama4.py and configuration_llama4.py of transformers e2372ffabdf6: pre-RMSNorm;
    RoPE on the layers with no_rope_layers[l] = 1 in Meta's interleaved pairs (apply_rotary_emb's
    complex freqs_cis: pair m is x[2m], x[2m+1]); then, on those layers with use_qk_norm, q and k
    heads RMS-normalised without weight (Llama4TextL2Norm, eps rms_norm_eps); on the others, with
    attn_temperature_tuning, q times 1 + attn_scale ln(floor((x + 1)/floor_scale) + 1); q.k times
    head_dim^-1/2; chunked_attention layers (layer_types, default the RoPE layers) see the keys
    j <= i with j // C == i // C, full_attention ones every j <= i; SwiGLU of width
    intermediate_size_mlp under feed_forward. Returns (last hidden state, logits)."""
    H, KV, d, D = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"], cfg["hidden_size"]
    eps, T, L = cfg["rms_norm_eps"], len(ids), cfg["num_hidden_layers"]
    rope_on = cfg.get("no_rope_layers") or [int((i + 1) % cfg.get("no_rope_layer_interval", 4) != 0)
                                             for i in range(L)]
    C = cfg.get("attention_chunk_size", 8192)
    types = cfg.get("layer_types") or ["chunked_attention" if r else "full_attention" for r in rope_on]
    w = {k: v.astype(np.float64) for k, v in w.items()}
    pos = np.arange(T)
    inv, _ = hf_rope(cfg, d, T)
    ang = np.outer(pos, inv)
    cos, sin = np.cos(ang), np.sin(ang)
    temp = 1.0 + cfg.get("attn_scale", 0.1) * np.log(np.floor((pos + 1.0) / cfg.get("floor_scale", 8192)) + 1.0)

    def rms(x, g=None):
        y = x / np.sqrt((x * x).mean(-1, keepdims=True) + eps)
        return y if g is None else y * g

    def rotate(x):  # [heads, T, d], pairs (2m, 2m + 1)
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = a * cos - b * sin, a * sin + b * cos
        return out

    causal = np.triu(np.full((T, T), -np.inf), 1)
    chunked = causal + np.where(pos[None, :] // C == pos[:, None] // C, 0.0, -np.inf) if C else causal
    h = w["model.embed_tokens.weight"][ids]
    for l in range(L):
        p = "model.layers.%d." % l
        a = rms(h, w[p + "input_layernorm.weight"])
        q = (a @ w[p + "self_attn.q_proj.weight"].T).reshape(T, H, d).transpose(1, 0, 2)
        k = (a @ w[p + "self_attn.k_proj.weight"].T).reshape(T, KV, d).transpose(1, 0, 2)
        v = (a @ w[p + "self_attn.v_proj.weight"].T).reshape(T, KV, d).transpose(1, 0, 2)
        if rope_on[l]:
            q, k = rotate(q), rotate(k)
            if cfg.get("use_qk_norm", True):
                q, k = rms(q), rms(k)
        elif cfg.get("attn_temperature_tuning", True):
            q = q * temp[None, :, None]
        k, v = np.repeat(k, H // KV, 0), np.repeat(v, H // KV, 0)
        s = q @ k.transpose(0, 2, 1) * d ** -0.5 + (chunked if types[l] == "chunked_attention" else causal)
        s = np.exp(s - s.max(-1, keepdims=True))
        z = ((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, H * d)
        h = h + z @ w[p + "self_attn.o_proj.weight"].T
        m = rms(h, w[p + "post_attention_layernorm.weight"])
        f = m @ w[p + "feed_forward.gate_proj.weight"].T
        f = f / (1.0 + np.exp(-f)) * (m @ w[p + "feed_forward.up_proj.weight"].T)
        h = h + f @ w[p + "feed_forward.down_proj.weight"].T
    h = rms(h, w["model.norm.weight"])
    return h, h @ w["lm_head.weight"].T


class TestLlama4(unittest.TestCase):
    """Llama 4's text decoder (llama4_text, dense layers), a folder written here with random
    weights, against llama4_reference; needs no ../shared. 20 tokens, chunks of 8: layer 3 is
    NoPE (every fourth), global, with the temperature (floor_scale 3 so that it moves here)."""

    CFG = {"model_type": "llama4_text", "architectures": ["Llama4ForCausalLM"], "vocab_size": 50,
           "hidden_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 8, "intermediate_size": 24, "intermediate_size_mlp": 40, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-5, "hidden_act": "silu", "rope_theta": 10000.0,
           "rope_scaling": {"rope_type": "llama3", "factor": 2.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 16},
           "attention_chunk_size": 8, "use_qk_norm": True, "attn_temperature_tuning": True, "floor_scale": 3,
           "attn_scale": 0.5, "moe_layers": [], "tie_word_embeddings": False, "attention_bias": False}

    @staticmethod
    def weights(cfg):
        D, I, d, V = cfg["hidden_size"], cfg["intermediate_size_mlp"], cfg["head_dim"], cfg["vocab_size"]
        A, KVd = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
        rng = np.random.default_rng(17)
        shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,), "lm_head.weight": (V, D)}
        for l in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % l
            shapes.update({p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,),
                           p + "self_attn.q_proj.weight": (A, D), p + "self_attn.k_proj.weight": (KVd, D),
                           p + "self_attn.v_proj.weight": (KVd, D), p + "self_attn.o_proj.weight": (D, A),
                           p + "feed_forward.gate_proj.weight": (I, D), p + "feed_forward.up_proj.weight": (I, D),
                           p + "feed_forward.down_proj.weight": (D, I)})
        return {k: ((1.0 + 0.2 * rng.standard_normal(s)) if k.endswith("norm.weight")
                    else 0.3 * rng.standard_normal(s)).astype(np.float32) for k, s in shapes.items()}

    def check(self, cfg, what):
        out, spec = numpy_check(self, cfg, what, "llama4", llama4_reference)
        return out["logits"][0], spec

    def test_matches_numpy(self):
        """The model as configured, and with each Llama 4 feature turned off in turn (chunks, the
        q/k norm, the temperature, every layer rotating): each matches numpy and each moves the
        logits, so every feature is checked."""
        base, spec = self.check(self.CFG, "as configured")
        self.assertEqual(spec, "rope:base=10000,scaling=llama3,original=16,factor=2,low_freq_factor=1,"
                               "high_freq_factor=4,pairing=interleaved,layers=0-2+temperature:attn_scale=0.5,"
                               "floor_scale=3,layers=3")
        for kw in ({"attention_chunk_size": None}, {"use_qk_norm": False}, {"attn_temperature_tuning": False},
                   {"no_rope_layers": [1, 1, 1, 1]}, {"layer_types": ["full_attention"] * 3 + ["chunked_attention"]}):
            got, _ = self.check(dict(self.CFG, **kw), str(kw))
            self.assertGreater(np.abs(got - base).max(), 1e-3, kw)

    def test_train_save_load_round_trip(self):
        """posemb train --init on a Llama 4 folder (1 step) writes what HF's Llama4TextConfig reads:
        llama4_text, moe_layers [], intermediate_size_mlp, no_rope_layers, layer_types, the chunk,
        the q/k norm and temperature keys, rope_theta with rope_scaling, no posemb_pe; read back, it
        matches numpy on the trained weights."""
        cfg, w, got = train_one_step(self.CFG, self.weights(self.CFG), TestLlamaReference.IDS)
        got = got["logits"][0]
        self.assertEqual((cfg["model_type"], cfg["architectures"], cfg["moe_layers"], cfg["intermediate_size_mlp"]),
                         ("llama4_text", ["Llama4ForCausalLM"], [], 40))
        self.assertEqual((cfg["no_rope_layers"], cfg["attention_chunk_size"], cfg["use_qk_norm"],
                          cfg["attn_temperature_tuning"], cfg["attn_scale"], cfg["floor_scale"]),
                         ([1, 1, 1, 0], 8, True, True, 0.5, 3))
        self.assertEqual(cfg["layer_types"], ["chunked_attention"] * 3 + ["full_attention"])
        self.assertEqual((cfg["rope_theta"], cfg["rope_scaling"]["rope_type"], cfg["rope_scaling"]["factor"]),
                         (10000.0, "llama3", 2.0))
        self.assertNotIn("posemb_pe", cfg)
        want = llama4_reference(w, cfg, TestLlamaReference.IDS)[1]
        self.assertLess(np.abs(got - want).max() / np.abs(want).max(), 1e-5)

    def test_perplexity_with_a_nope_first_layer(self):
        """`posemb perplexity` (inference, every layer in layer 0's buffers) on a model whose first
        layer is NoPE and the others normalise q and k, against numpy's loss; it crashed before
        the buffers were sized for any layer's norm."""
        cfg = dict(self.CFG, no_rope_layers=[0, 1, 1, 1], attn_temperature_tuning=4)  # 4.51's default: truthy
        w, ids = self.weights(cfg), TestLlamaReference.IDS
        got, _ = perplexity_of(cfg, w, ids)
        logits = llama4_reference(w, dict(cfg, attn_temperature_tuning=True), ids)[1]
        logp = logits - logits.max(-1, keepdims=True)
        logp = logp - np.log(np.exp(logp).sum(-1, keepdims=True))
        nll = -np.mean([logp[t, ids[t + 1]] for t in range(len(ids) - 1)])
        self.assertLess(abs(np.log(got["perplexity"]) - nll), 1e-5 * nll, (got, nll))

    def test_config_forms(self):
        """Llama4TextModel (the head-less class) loads; a posemb_pe that HF's keys cannot say (halves
        pairing) survives a save and a load."""
        w = self.weights(self.CFG)
        with model_folder(dict(self.CFG, architectures=["Llama4TextModel"]), w) as m:
            self.assertEqual(m.config["architecture"], "Llama4TextModel")
        cfg, _, _ = train_one_step(dict(self.CFG, posemb_pe="rope:base=500000"), w)
        self.assertEqual(cfg["posemb_pe"], "rope:base=500000")

    def test_refusals(self):
        cfg = dict(self.CFG)
        del cfg["moe_layers"]
        for c, msg in ((cfg, "every layer a mixture of experts"),
                       (dict(self.CFG, moe_layers=[1]), "moe_layers lists mixture-of-experts layers"),
                       (dict(self.CFG, no_rope_layers=[1, 0]), "no_rope_layers must list"),
                       (dict(self.CFG, layer_types=["sliding_attention"] * 4), "layer_types\\[0\\]")):
            with tempfile.TemporaryDirectory() as d:
                with open(os.path.join(d, "config.json"), "w") as f:
                    json.dump(c, f)
                with self.assertRaisesRegex(posemb.Error, "config.json: .*" + msg):
                    posemb.Model(d)


class TestSmolLM3(unittest.TestCase):
    """SmolLM3 (smollm3): a Llama whose no_rope_layers[l] = 0 layers do not rotate, rope_theta
    2000000 when absent, windows only with use_sliding_window, on the NoPE layers by default
    (huggingface/transformers configuration_smollm3.py @6551e17, modular_smollm3.py @cbc6e94 and
    modeling_smollm3.py @b0fc62d, of the 4.5x series), against llama_reference; needs no ../shared."""

    CFG = {"model_type": "smollm3", "architectures": ["SmolLM3ForCausalLM"], "vocab_size": 50, "hidden_size": 32,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 12,
           "intermediate_size": 40, "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "hidden_act": "silu",
           "no_rope_layer_interval": 2, "use_sliding_window": True, "sliding_window": 5}

    def test_empty_no_rope_layers_refused(self):
        """SmolLM3Config keeps no_rope_layers [] and fails on layer 0; posemb says so (Llama 4 reads [] as
        the default)."""
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(dict(self.CFG, no_rope_layers=[]), f)
            with self.assertRaisesRegex(posemb.Error, r"config.json: no_rope_layers is \[\]"):
                posemb.Model(d)

    def run_cfg(self, cfg):
        w = TestLlamaReference.llama_weights(cfg, 0)
        with model_folder(cfg, w) as m:
            return w, m.forward([TestLlamaReference.IDS])["last_hidden_state"][0], m.config["pe"]

    def test_matches_numpy(self):
        """Layer 1 is NoPE (interval 2) and slides (W 5); layer 0 rotates at base 2e6, the default.
        Without the window, or with every layer rotating, posemb still matches numpy, and each
        moves the output, so the NoPE layer and the window are both checked."""
        cases = ((self.CFG, {1}, [None, 5]), (dict(self.CFG, use_sliding_window=False), {1}, None),
                 (dict(self.CFG, no_rope_layers=[1, 1]), (), None))
        outs = []
        for cfg, nope, windows in cases:
            w, got, spec = self.run_cfg(cfg)
            want = llama_reference(w, dict(cfg, rope_theta=2e6), TestLlamaReference.IDS, windows=windows, nope=nope)
            err = np.abs(got - want).max() / np.abs(want).max()
            print("smollm3 %s: max |posemb - numpy| / max |numpy| = %.2e" % (spec, err), file=sys.stderr)
            self.assertLess(err, 1e-5, spec)
            outs.append(got)
        self.assertEqual(self.run_cfg(self.CFG)[2], "rope:base=2000000,layers=0")
        self.assertGreater(np.abs(outs[0] - outs[1]).max(), 1e-3)
        self.assertGreater(np.abs(outs[1] - outs[2]).max(), 1e-3)

    def test_train_save_load_round_trip(self):
        """posemb train --init writes SmolLM3's keys (no_rope_layers, rope_theta, the window with
        use_sliding_window and layer_types, tied embeddings) and no posemb_pe; read back, it
        matches numpy on the trained weights."""
        cfg, w, got = train_one_step(self.CFG, TestLlamaReference.llama_weights(self.CFG, 0), TestLlamaReference.IDS)
        self.assertEqual((cfg["model_type"], cfg["architectures"], cfg["no_rope_layers"], cfg["rope_theta"]),
                         ("smollm3", ["SmolLM3ForCausalLM"], [1, 0], 2e6))
        self.assertEqual((cfg["use_sliding_window"], cfg["sliding_window"], cfg["layer_types"],
                          cfg["tie_word_embeddings"]), (True, 5, ["full_attention", "sliding_attention"], True))
        self.assertNotIn("posemb_pe", cfg)
        self.assertIsNone(cfg["pad_token_id"])  # not SmolLM3Config's 128004, past this vocabulary
        want = llama_reference(w, cfg, TestLlamaReference.IDS, windows=[None, 5], nope={1})
        got = got["last_hidden_state"][0]
        self.assertLess(np.abs(got - want).max() / np.abs(want).max(), 1e-5)


def neox_block_inv(frac):
    """GPT-NeoX's partial rotary (rotary_pct; HF's partial_rotary_factor for gpt_neox and phi):
    _compute_default_rope_parameters' dim = int(head_dim * frac), inv_freq over that dim."""
    def inv(cfg, d, T):
        r = int(d * frac)
        return 1.0 / cfg["rope_theta"] ** (np.arange(0, r, 2) / r), 1.0
    return inv


def p_rope_inv(p):
    """p-RoPE as Barbero et al. 2024 (arXiv 2410.06205) give apply_p_rope: rope_angles =
    int(p * head_dim // 2) pairs keep 1 / base^(2m / head_dim); the timescale of the others is
    padded with inf, an inverse frequency of 0; the halves of the whole head pair."""
    def inv(cfg, d, T):
        angles = int(p * d // 2)
        rot = 1.0 / cfg["rope_theta"] ** ((2.0 / d) * np.arange(angles))
        return np.concatenate([rot, np.zeros(d // 2 - angles)]), 1.0
    return inv


class TestMRoPE(unittest.TestCase):
    """M-RoPE as Qwen2-VL's and Qwen3-VL's text decoders run it (model_type qwen2_vl_text,
    qwen3_vl_text): 3D position_ids [3, B, T] of text, a 3 x 4 image and text again, as HF's
    get_rope_index lays them out, against llama_reference with hf_mrope (HF's code written out);
    needs no ../shared."""

    # 5 text tokens, a 1 x 3 x 4 image from id 5 (t 5, h 5 + row, w 5 + col), text from 5 + 4
    POS3 = np.array([list(range(5)) + [5] * 12 + [9, 10, 11],
                     list(range(5)) + [5 + r for r in range(3) for c in range(4)] + [9, 10, 11],
                     list(range(5)) + [5 + c for r in range(3) for c in range(4)] + [9, 10, 11]])

    @staticmethod
    def cfg(kind, **kw):
        base = TestLlamaReference().llama_cfg(max_position_embeddings=64)
        if kind == 2:
            rs = {"type": "mrope", "mrope_section": [2, 2, 2]}
            c = dict(base, model_type="qwen2_vl_text", architectures=["Qwen2VLTextModel"], rope_scaling=rs)
        else:
            rs = {"rope_type": "default", "mrope_section": [2, 2, 2], "mrope_interleaved": True}
            c = dict(base, model_type="qwen3_vl_text", architectures=["Qwen3VLTextModel"], rope_scaling=rs,
                     attention_bias=False)
        c.update(kw)
        return c

    @staticmethod
    def weights(cfg):
        """The tiny Llama's weights: Qwen2-VL's with q, k, v biases alone, Qwen3-VL's with q_norm, k_norm."""
        if cfg["model_type"] == "qwen3_vl_text":
            return TestLlamaReference.llama_weights(dict(cfg, model_type="qwen3"), 0)
        return {k: v for k, v in TestLlamaReference.llama_weights(cfg, 1).items()
                if k.endswith("weight") or k.split(".")[-2] in ("q_proj", "k_proj", "v_proj")}

    def run_pos(self, cfg, pos):
        w = self.weights(cfg)
        with model_folder(cfg, w) as m:
            spec = m.config["pe"]
            got = m.forward([TestLlamaReference.IDS], position_ids=None if pos is None else pos[:, None, :])
        return w, spec, got["last_hidden_state"][0]

    def test_both_layouts_match_numpy(self):
        for kind, layout in ((2, "mrope=2|2|2"), (3, "mrope=2|2|2,mrope_interleaved=on")):
            cfg = self.cfg(kind)
            w, spec, got = self.run_pos(cfg, self.POS3)
            self.assertTrue(spec.endswith(layout), spec)
            TestLlamaReference().assert_matches(got, llama_reference(w, cfg, TestLlamaReference.IDS, self.POS3),
                                                "%s, 3D position_ids" % cfg["model_type"])
            # the other layout and one axis for all are other models here: the check can fail
            moved = np.abs(got - llama_reference(w, cfg, TestLlamaReference.IDS, self.POS3,
                                                 interleave=kind == 2)).max()
            self.assertGreater(moved, 1e-3, "layouts indistinguishable")
            self.assertGreater(np.abs(got - llama_reference(w, cfg, TestLlamaReference.IDS, self.POS3[0])).max(),
                               1e-3)

    def test_text_is_plain_rope(self):
        """Without 3D ids every axis is the token's position: Llama's RoPE."""
        for kind in (2, 3):
            cfg = self.cfg(kind)
            w, _, got = self.run_pos(cfg, None)
            TestLlamaReference().assert_matches(got, llama_reference(w, cfg, TestLlamaReference.IDS),
                                                "%s, text" % cfg["model_type"])
            _, _, same = self.run_pos(cfg, np.stack([np.arange(20)] * 3))
            self.assertLess(np.abs(got - same).max(), 1e-6)

    def test_position_ids_helper(self):
        """posemb.mrope_position_ids lays out text, a 1 x 3 x 4 image and text as HF's get_rope_index:
        the ids this class writes by hand; and a 2-frame image, frames on the temporal axis."""
        got = posemb.mrope_position_ids([("text", 5), ("image", 1, 3, 4), ("text", 3)])
        self.assertTrue(np.array_equal(got, self.POS3))
        two = posemb.mrope_position_ids([("image", 2, 1, 2), ("text", 1)])
        self.assertEqual(two.tolist(), [[0, 0, 1, 1, 2], [0, 0, 0, 0, 2], [0, 1, 0, 1, 2]])
        with self.assertRaises(posemb.Error):
            posemb.mrope_position_ids([("image", 1, 0, 4)])

    def test_cli_forward_reads_3d_ids(self):
        """`posemb forward` with position_ids [3][1][T] in inputs.json gives Model.forward's output."""
        cfg = self.cfg(3)
        w, _, want = self.run_pos(cfg, self.POS3)
        with tempfile.TemporaryDirectory() as d:
            write_safetensors(os.path.join(d, "model.safetensors"), w)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
            with open(os.path.join(d, "inputs.json"), "w") as f:
                json.dump({"input_ids": [TestLlamaReference.IDS], "position_ids": self.POS3[:, None, :].tolist()}, f)
            subprocess.run([BIN, "forward", d, "--inputs", os.path.join(d, "inputs.json"), "--out",
                            os.path.join(d, "out.safetensors")], check=True, capture_output=True)
            got = read_safetensors(os.path.join(d, "out.safetensors"))["last_hidden_state"][0]
        self.assertLess(np.abs(got - want).max(), 1e-6)

    def test_refusals(self):
        cfg = self.cfg(2)
        llama = TestLlamaReference().llama_cfg()
        with model_folder(llama, TestLlamaReference.llama_weights(llama, 0)) as m:
            with self.assertRaises(posemb.Error) as e:
                m.forward([TestLlamaReference.IDS[:8]], position_ids=self.POS3[:, None, :8])
            self.assertIn("reads one position per token", str(e.exception))
        bad = [(dict(cfg, rope_scaling={"type": "mrope", "mrope_section": [2, 2, 3]}), "summing to the 6"),
               (dict(cfg, rope_scaling={"type": "mrope"}), "mrope_section"),
               (dict(cfg, rope_scaling={"type": "mrope", "mrope_section": [2, 2, 2], "mrope_interleaved": True}),
                "does not interleave")]
        for c, msg in bad:
            with self.assertRaises(posemb.Error) as e:
                with model_folder(c, self.weights(cfg)):
                    pass
            self.assertIn(msg, str(e.exception))
        with model_folder(cfg, self.weights(cfg)) as m:
            with self.assertRaises(posemb.Error) as e:
                m.forward([TestLlamaReference.IDS], position_ids=self.POS3[:, None, :5])
            self.assertIn("3-axis position_ids", str(e.exception))

    def test_train_save_load_round_trip(self):
        """posemb train writes HF's keys back (rope_theta, rope_scaling's mrope_section, no posemb_pe)
        whatever the order of --pe's options, and the trained folder reads back as the same PE; a spec
        HF's class for the model_type would not run (another layout, a second component, no mrope=)
        stays in posemb_pe and reads back whole."""
        cases = [(2, None, "rope:base=1000,mrope=2|2|2"),
                 (3, None, "rope:base=1000,mrope=2|2|2,mrope_interleaved=on"),
                 (2, "rope:scaling=none,mrope=2|2|2,base=1000000", "rope:base=1000000,mrope=2|2|2"),
                 (3, "rope:mrope_interleaved=on,mrope=2|2|2,scaling=linear,factor=2,base=500000",
                  "rope:base=500000,scaling=linear,factor=2,mrope=2|2|2,mrope_interleaved=on")]
        for kind, pe, want in cases:
            cfg, back = self.cfg(kind), []
            saved, _, _ = train_one_step(cfg, self.weights(cfg), pe=pe, spec_back=back)
            self.assertNotIn("posemb_pe", saved, pe)
            self.assertEqual(saved["rope_theta"], float(want.split(",")[0].split("=")[1]), pe)
            self.assertEqual(saved["rope_scaling"]["mrope_section"], [2, 2, 2])
            self.assertEqual(saved["rope_scaling"].get("mrope_interleaved", False), kind == 3)
            self.assertEqual(saved["model_type"], cfg["model_type"])
            self.assertEqual(back[0], want, pe)
        for kind, pe in ((2, "rope:base=1000,mrope=2|2|2+random:max=64"), (2, "rope:base=1000"),
                         (2, "rope:base=1000,mrope=2|2|2,mrope_interleaved=on")):
            cfg, back = self.cfg(kind), []
            saved, _, _ = train_one_step(cfg, self.weights(cfg), pe=pe, spec_back=back)
            self.assertEqual(saved.get("posemb_pe"), pe)
            self.assertEqual(back[0], pe)


class TestPartialRotary(unittest.TestCase):
    """The three ways to rotate part of a head (issue 53), each through a Llama of head width 12
    against numpy: GPT-NeoX's block (posemb rope:frac=), HF's proportional rope_type read from a
    config (rope_parameters with partial_rotary_factor, as transformers 5's
    _compute_proportional_rope_parameters computes it: hf_rope) and p-RoPE (rope:p=). The three differ on this
    model, so each check can fail."""

    def forward(self, cfg, pe=None):
        w = TestLlamaReference.llama_weights(cfg, 0)
        if pe:
            cfg = dict(cfg, posemb_pe=pe)
        with tempfile.TemporaryDirectory() as d:
            write_safetensors(os.path.join(d, "model.safetensors"), w)
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
            with posemb.Model(d) as m:
                return w, m.forward([TestLlamaReference.IDS])["last_hidden_state"][0], m.config["pe"]

    def check(self, what, got, want):
        err = np.abs(got - want).max() / np.abs(want).max()
        print("%s: max |posemb - numpy| / max |numpy| = %.2e" % (what, err), file=sys.stderr)
        self.assertLess(err, 1e-5, what)

    def test_three_conventions_match_numpy(self):
        base = TestLlamaReference().llama_cfg(max_position_embeddings=32)
        outs = {}
        # GPT-NeoX's block: int(12 * 0.5) = 6 dims rotate, pairs (m, m + 3), w_m = base^(-2m/6)
        w, outs["neox"], spec = self.forward(base, "rope:base=1000,frac=0.5")
        self.check("neox block, frac 0.5", outs["neox"], llama_reference(w, base, TestLlamaReference.IDS,
                                                                         rope_inv=neox_block_inv(0.5)))
        # HF's proportional, as HF 5 writes it: int(0.5 * 12 // 2) = 3 of 6 pairs over the whole head
        prop = {k: v for k, v in base.items() if k != "rope_theta"}
        prop["rope_parameters"] = {"rope_type": "proportional", "rope_theta": 1000.0, "partial_rotary_factor": 0.5}
        w, outs["proportional"], spec = self.forward(prop)
        self.assertEqual(spec, "rope:base=1000,frac=0.5,partial=proportional")
        self.check("proportional, 0.5", outs["proportional"], llama_reference(w, prop, TestLlamaReference.IDS))
        # with factor: HF divides every inv_freq by it, posemb's scaling=linear
        prop["rope_parameters"] = dict(prop["rope_parameters"], factor=2.0)
        w, got, spec = self.forward(prop)
        self.assertIn("scaling=linear,factor=2", spec)
        self.check("proportional, 0.5, factor 2", got, llama_reference(w, prop, TestLlamaReference.IDS))
        # p-RoPE 0.75: int(0.75 * 12 // 2) = 4 pairs (round would keep 5)
        w, outs["p"], spec = self.forward(base, "rope:base=1000,p=0.75")
        self.check("p-RoPE 0.75", outs["p"], llama_reference(w, base, TestLlamaReference.IDS,
                                                             rope_inv=p_rope_inv(0.75)))
        names = sorted(outs)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                self.assertGreater(np.abs(outs[a] - outs[b]).max(), 1e-3, (a, b))

    def test_partial_factor_without_proportional_is_refused(self):
        """HF's Llama rotates the whole head whatever partial_rotary_factor says (its default
        rope ignores it, the scaled ones fail on the shorter cos): refused, not guessed."""
        cfg = TestLlamaReference().llama_cfg(partial_rotary_factor=0.5)
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "config.json"), "w") as f:
                json.dump(cfg, f)
            with self.assertRaisesRegex(posemb.Error, "config.json: partial_rotary_factor 0.5 with rope_type default"):
                posemb.Model(d)


def neox_reference(w, cfg, ids, pos=None):
    """HF's GPTNeoXForCausalLM forward in float64 numpy, from modeling_gpt_neox.py of
    transformers 006bd23dd0ce (read through the search index): LayerNorm, query_key_value
    read per head as [q_h, k_h, v_h], rotate_half RoPE on the first
    rotary_ndims = int(head_size * rotary_pct) dims with inv_freq over rotary_ndims (its
    linear scaling divides the positions, its dynamic NTK grows the base with the length,
    exponent rotary_ndims / (rotary_ndims - 2)), exact GELU, parallel or serial residual,
    final_layer_norm, embed_out (or embed_in when tied). Returns (last hidden state, logits)."""
    H, D, L = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    d, T, eps = D // H, len(ids), cfg.get("layer_norm_eps", 1e-5)
    r = int(d * cfg.get("rotary_pct", 0.25))
    pos = np.arange(T) if pos is None else np.asarray(pos)
    w = {k: v.astype(np.float64) for k, v in w.items() if v.dtype != np.bool_}
    base, rs, P = cfg.get("rotary_emb_base", 10000), cfg.get("rope_scaling") or {}, cfg["max_position_embeddings"]
    seq = int(pos.max()) + 1
    if rs.get("type") == "dynamic" and seq > P:
        base = base * (rs["factor"] * seq / P - (rs["factor"] - 1)) ** (r / (r - 2))
    inv = 1.0 / base ** (np.arange(0, r, 2) / r)
    t = pos / rs["factor"] if rs.get("type") == "linear" else pos
    ang = np.outer(t, inv)
    cos, sin = np.cos(np.concatenate([ang, ang], 1)), np.sin(np.concatenate([ang, ang], 1))
    erf = np.vectorize(math.erf)

    def ln(x, name):
        mu, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w[name + ".weight"] + w[name + ".bias"]

    def lin(x, name):
        return x @ w[name + ".weight"].T + w.get(name + ".bias", 0.0)

    def attn(x, p):
        qkv = lin(x, p + "attention.query_key_value").reshape(T, H, 3 * d).transpose(1, 0, 2)
        q, k, v = neox_rotary(qkv[..., :d], cos, sin), neox_rotary(qkv[..., d:2 * d], cos, sin), qkv[..., 2 * d:]
        s = q @ k.transpose(0, 2, 1) / np.sqrt(d) + np.triu(np.full((T, T), -np.inf), 1)
        s = np.exp(s - s.max(-1, keepdims=True))
        return lin(((s / s.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(T, D), p + "attention.dense")

    def mlp(x, p):
        u = lin(x, p + "mlp.dense_h_to_4h")
        return lin(0.5 * u * (1 + erf(u / np.sqrt(2))), p + "mlp.dense_4h_to_h")

    h = w["gpt_neox.embed_in.weight"][ids]
    for l in range(L):
        p = "gpt_neox.layers.%d." % l
        a = attn(ln(h, p + "input_layernorm"), p)
        if cfg.get("use_parallel_residual", True):
            h = h + a + mlp(ln(h, p + "post_attention_layernorm"), p)
        else:
            h = h + a
            h = h + mlp(ln(h, p + "post_attention_layernorm"), p)
    h = ln(h, "gpt_neox.final_layer_norm")
    out = w["gpt_neox.embed_in.weight"] if cfg.get("tie_word_embeddings") else w["embed_out.weight"]
    return h, h @ out.T


class TestGPTNeoX(unittest.TestCase):
    """GPT-NeoX (Pythia's architecture) folders written here with random weights, against
    neox_reference; needs no ../shared."""

    IDS = TestLlamaReference.IDS

    @staticmethod
    def cfg(**kw):
        c = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": 50,
             "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 80,
             "max_position_embeddings": 32, "rotary_pct": 0.25, "rotary_emb_base": 10000, "layer_norm_eps": 1e-5,
             "hidden_act": "gelu", "use_parallel_residual": True, "tie_word_embeddings": False,
             "attention_bias": True, "hidden_dropout": 0.0, "attention_dropout": 0.0, "use_cache": True,
             "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float16"}
        c.update(kw)
        return c

    @staticmethod
    def weights(cfg, buffers=False):
        """Random weights under HF's names; buffers: the causal mask, masked_bias and
        inv_freq that older Pythia files carry."""
        D, I, V, P = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["max_position_embeddings"]
        bias = cfg.get("attention_bias", True)
        rng = np.random.default_rng(11)
        shapes = {"gpt_neox.embed_in.weight": (V, D), "gpt_neox.final_layer_norm.weight": (D,),
                  "gpt_neox.final_layer_norm.bias": (D,)}
        if not cfg.get("tie_word_embeddings"):
            shapes["embed_out.weight"] = (V, D)
        for l in range(cfg["num_hidden_layers"]):
            p = "gpt_neox.layers.%d." % l
            for n in ("input_layernorm", "post_attention_layernorm"):
                shapes.update({p + n + ".weight": (D,), p + n + ".bias": (D,)})
            shapes.update({p + "attention.query_key_value.weight": (3 * D, D), p + "attention.dense.weight": (D, D),
                           p + "mlp.dense_h_to_4h.weight": (I, D), p + "mlp.dense_h_to_4h.bias": (I,),
                           p + "mlp.dense_4h_to_h.weight": (D, I), p + "mlp.dense_4h_to_h.bias": (D,)})
            if bias:
                shapes.update({p + "attention.query_key_value.bias": (3 * D,), p + "attention.dense.bias": (D,)})
        w = {k: (1 + 0.1 * rng.standard_normal(s) if k.endswith("norm.weight") else 0.3 * rng.standard_normal(s))
             .astype(np.float32) for k, s in shapes.items()}
        for l in range(cfg["num_hidden_layers"] if buffers else 0):
            p = "gpt_neox.layers.%d.attention." % l
            w[p + "bias"] = np.tril(np.ones((P, P), dtype=np.bool_)).reshape(1, 1, P, P)
            w[p + "masked_bias"] = np.array(-1e9, dtype=np.float32)
            w[p + "rotary_emb.inv_freq"] = np.ones(4, dtype=np.float32)
        return w

    def run_neox(self, cfg, ids=None, pos=None, buffers=False):
        ids = self.IDS if ids is None else ids
        w = self.weights(cfg, buffers)
        with model_folder(cfg, w) as m:
            return w, m.forward([ids], position_ids=None if pos is None else [pos]), m.config["pe"]

    def check(self, cfg, what, pos=None, buffers=False):
        w, out, spec = self.run_neox(cfg, pos=pos, buffers=buffers)
        h, logits = neox_reference(w, cfg, self.IDS, pos)
        for name, got, want in (("hidden", out["last_hidden_state"][0], h), ("logits", out["logits"][0], logits)):
            err = np.abs(got - want).max() / np.abs(want).max()
            print("gpt_neox %s, %s: max |posemb - numpy| / max |numpy| = %.2e" % (what, name, err), file=sys.stderr)
            self.assertLess(err, 1e-5, (what, name))
        return out["last_hidden_state"][0], spec

    def test_pythia_layout_matches_numpy(self):
        """Pythia's settings (parallel residual, rotary_pct 0.25, biases, untied embed_out),
        with the buffers older Pythia files carry (a BOOL causal mask among them); then
        the serial residual, the whole head rotating, no attention biases, tied embeddings.
        The two models differ, so each check can fail."""
        a, spec = self.check(self.cfg(), "pythia", buffers=True)
        self.assertEqual(spec, "rope:base=10000,frac=0.25")
        cfg = self.cfg(use_parallel_residual=False, rotary_pct=1.0, attention_bias=False, tie_word_embeddings=True)
        b, spec = self.check(cfg, "serial, full rotary, no biases, tied")
        self.assertEqual(spec, "rope:base=10000")
        self.assertGreater(np.abs(a - b).max(), 1e-2)

    def test_scaling_past_max_position_and_position_ids(self):
        """20 tokens through max_position_embeddings 8 with rotary_pct 0.5: plain, linear
        (positions / 2) and dynamic NTK (HF's base * (2 * 20/8 - 1)^(4/2), exponent over the
        rotated dims); then packed position_ids (12 + 8, restarting) with rotary_pct 0.25."""
        outs = {}
        for name, rs in (("plain", None), ("linear", {"type": "linear", "factor": 2.0}),
                         ("dynamic", {"type": "dynamic", "factor": 2.0})):
            outs[name], _ = self.check(self.cfg(max_position_embeddings=8, rotary_pct=0.5, rope_scaling=rs),
                                       "%s at 20 tokens, max 8" % name)
        self.assertGreater(np.abs(outs["plain"] - outs["dynamic"]).max(), 1e-3)
        self.assertGreater(np.abs(outs["plain"] - outs["linear"]).max(), 1e-3)
        packed = list(range(12)) + list(range(8))
        got, _ = self.check(self.cfg(), "packed position_ids", pos=packed)
        self.assertGreater(np.abs(got - self.check(self.cfg(), "0..19")[0]).max(), 1e-3)

    def test_refusals(self):
        """An odd number of rotated dims (HF's rotate_half cannot split it), a scaling GPT-NeoX
        does not have, a non-boolean switch: each one line naming config.json."""
        for kw, msg in (({"rotary_pct": 0.3}, None),
                        ({"rotary_pct": 0.2}, "= 3 dims of each head; HF's rotate_half needs an even"),
                        ({"rope_scaling": {"rope_type": "proportional"}}, "not supported"),
                        ({"use_parallel_residual": "yes"}, "use_parallel_residual\" must be true or false")):
            cfg = self.cfg(**kw)
            with tempfile.TemporaryDirectory() as d:
                write_safetensors(os.path.join(d, "model.safetensors"), self.weights(cfg))
                with open(os.path.join(d, "config.json"), "w") as f:
                    json.dump(cfg, f)
                if msg is None:  # int(16 * 0.3) = 4 dims: HF accepts it, so does posemb
                    with posemb.Model(d) as m:
                        self.assertEqual(m.config["pe"], "rope:base=10000,frac=0.29999999999999999")
                    continue
                with self.assertRaisesRegex(posemb.Error, "config.json: .*" + msg):
                    posemb.Model(d)

    def test_train_save_load_round_trip(self):
        """`posemb train --model gpt_neox` (3 steps) writes a folder whose config.json says
        what HF's GPTNeoXConfig reads (rotary_pct and the eps as floats, parallel residual,
        untied embed_out); posemb.Model reads it back and matches neox_reference on the
        trained weights."""
        letters = [chr(ord("a") + i) for i in range(26)]
        tok = {"model": {"type": "BPE", "vocab": {c: i for i, c in enumerate(letters)}, "merges": []}}
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "tokenizer.json"), "w") as f:
                json.dump(tok, f)
            with open(os.path.join(d, "text.txt"), "w") as f:
                f.write("".join(letters[(i * 7) % 26] for i in range(4000)))
            out = os.path.join(d, "run")
            subprocess.run([BIN, "train", "--model", "gpt_neox", "--data", os.path.join(d, "text.txt"),
                            "--tokenizer", os.path.join(d, "tokenizer.json"), "--out", out, "--layers", "2",
                            "--hidden", "64", "--heads", "4", "--seq-len", "16", "--batch-size", "2", "--steps", "3",
                            "--threads", "1"], check=True, capture_output=True)
            with open(os.path.join(out, "config.json")) as f:
                text = f.read()
            cfg = json.loads(text)
            self.assertEqual((cfg["model_type"], cfg["architectures"]), ("gpt_neox", ["GPTNeoXForCausalLM"]))
            self.assertEqual((cfg["rotary_pct"], cfg["use_parallel_residual"], cfg["tie_word_embeddings"]),
                             (0.25, True, False))
            self.assertIn('"rotary_pct":\t0.25', text)
            self.assertIn('"layer_norm_eps":\t1e-05', text)
            self.assertNotIn("posemb_pe", cfg)
            w = read_safetensors(os.path.join(out, "model.safetensors"))
            self.assertIn("embed_out.weight", w)
            ids = [i % 26 for i in self.IDS[:16]]
            with posemb.Model(out) as m:
                got = m.forward([ids])
        self.assertEqual(set(w) - {"embed_out.weight"}, {k for k in w if k.startswith("gpt_neox.")})
        h, logits = neox_reference(w, cfg, ids)
        self.assertLess(np.abs(got["logits"][0] - logits).max() / np.abs(logits).max(), 1e-5)


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

    def test_attention_profile_on_a_text(self):
        """posemb analyze --text's attention profile, recomputed with numpy from
        the attention maps Model.forward gives (those of HF's GPT-2, by
        test_gpt2_matches_hf) on the same windows of the same text: every
        layer and head's mean distance and first-token mass."""
        text = ("The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. " * 8)[:600]
        # byte-level BPE without merges, id = byte (ASCII): GPT-2's map writes bytes 0-32 as chr(256 + b), the space "\u0120"
        vocab = {chr(b) if 33 <= b <= 126 else chr(256 + b): b for b in range(127)}
        tok = {"version": "1.0", "added_tokens": [], "normalizer": None,
               "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
                                 "use_regex": False},
               "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
               "model": {"type": "BPE", "vocab": vocab, "merges": []}}
        with tempfile.TemporaryDirectory() as d:
            for name in ("config.json", "model.safetensors"):
                shutil.copy(os.path.join(GOLDEN, "gpt2", name), d)
            with open(os.path.join(d, "tokenizer.json"), "w") as f:
                json.dump(tok, f)
            with open(os.path.join(d, "text.txt"), "w") as f:
                f.write(text)
            cli("analyze", d, "--text", os.path.join(d, "text.txt"), "--words", "5", "--no-figures", "--out",
                os.path.join(d, "an"))
            with open(os.path.join(d, "an", "indicators.json")) as f:
                got = json.load(f)["attention"]
            n, B = 64, 8
            ids = np.frombuffer(text.encode()[:B * n], dtype=np.uint8).astype(np.int32).reshape(B, n)
            with posemb.Model(d) as m:
                att = m.forward(ids)["attentions"]
        self.assertEqual((got["length"], got["sequences"], got["inputs"]), (n, B, "windows of the text"))
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        dist = np.array([(a * np.abs(i - j)).sum(-1).mean(axis=(0, 2)) for a in att]).ravel()  # [layer x head]
        sink = np.array([a[..., 0].mean(axis=(0, 2)) for a in att]).ravel()
        np.testing.assert_allclose(got["mean_distance"], dist, rtol=1e-5)
        np.testing.assert_allclose(got["first_token_mass"], sink, rtol=1e-5)

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
