"""posemb from Python: position embeddings, their analysis, and models.

A thin ctypes layer over libposemb (the C library the `posemb` CLI is built
on), returning numpy arrays:

    import posemb
    tables = posemb.pe_matrices("sin", length=128, dim=64)   # {"ape": array [128, 64], ...}
    found = posemb.analyze(tables["ape"], K=32)                # indicators.json as a dict
    model = posemb.Model("path/to/hf-folder")                  # config.json + model.safetensors
    out = model.forward([[101, 7592, 102]])                    # {"last_hidden_state": ..., ...}

Errors raise posemb.Error, whose message is posemb's one-line message.
The library is found next to this module when installed (cmake --install),
or where the environment variable POSEMB_LIBRARY points.
"""
import ctypes
import json
import os
import tempfile

import numpy as np

__all__ = ["Error", "Model", "analyze", "blas_core", "pe_families", "pe_matrices", "version"]


class Error(Exception):
    """A failure inside libposemb; str(e) is its message, e.code its status name."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


# ---- the library -----------------------------------------------------------

def _library_path():
    env = os.environ.get("POSEMB_LIBRARY")
    if env:
        return env
    try:
        from . import _install
    except ImportError:
        _install = None
    if _install is not None:
        here = os.path.dirname(os.path.abspath(__file__))
        depth = len([p for p in _install.PYTHON_DIR.split("/") if p]) + 1
        prefix = os.path.normpath(os.path.join(here, *([".."] * depth)))
        path = os.path.join(prefix, _install.LIBDIR, _install.LIBRARY)
        if os.path.exists(path):
            return path
    import ctypes.util
    found = ctypes.util.find_library("posemb")
    if found:
        return found
    raise ImportError("posemb: libposemb.so not found; install posemb (cmake --install) "
                      "or set POSEMB_LIBRARY to the library's path")


_lib = ctypes.CDLL(_library_path())

_c_int, _c_float, _c_double = ctypes.c_int, ctypes.c_float, ctypes.c_double
_pfloat = ctypes.POINTER(ctypes.c_float)
_pint32 = ctypes.POINTER(ctypes.c_int32)


class _Error(ctypes.Structure):  # posemb/error.h
    _fields_ = [("code", _c_int), ("msg", ctypes.c_char * 512)]


class _PeDims(ctypes.Structure):  # posemb/pe.h
    _fields_ = [("dim", _c_int), ("n_heads", _c_int), ("head_dim", _c_int), ("n_layers", _c_int),
                ("max_len", _c_int), ("causal", _c_int), ("max_threads", _c_int)]


class _NamedMatrix(ctypes.Structure):  # posemb/pe.h
    _fields_ = [("name", ctypes.c_char * 64), ("desc", ctypes.c_char * 96), ("rows", _c_int), ("cols", _c_int),
                ("data", _pfloat)]


class _Export(ctypes.Structure):  # posemb/pe.h
    _fields_ = [("n", _c_int), ("cap", _c_int), ("items", ctypes.POINTER(_NamedMatrix))]


class _FamilyDoc(ctypes.Structure):  # posemb/pe.h
    _fields_ = [("name", ctypes.c_char_p), ("summary", ctypes.c_char_p), ("options", ctypes.c_char_p),
                ("positions_only", _c_int)]


class _AnalyzeOpts(ctypes.Structure):  # posemb/analyze.h
    _fields_ = [("K", _c_int), ("n_words", _c_int), ("pairs", _c_int), ("folds", _c_int), ("seed", ctypes.c_uint64),
                ("ridge", _c_double), ("dims_frac", _c_double), ("figures", _c_int), ("svg", _c_int),
                ("report", _c_int), ("quiet", _c_int), ("text", _pint32), ("text_n", ctypes.c_long)]


class _Config(ctypes.Structure):  # posemb/model.h
    _fields_ = [("arch", _c_int), ("head", _c_int), ("num_labels", _c_int), ("vocab_size", _c_int),
                ("hidden", _c_int), ("layers", _c_int), ("heads", _c_int), ("intermediate", _c_int),
                ("max_position", _c_int), ("type_vocab", _c_int), ("pad_token_id", _c_int),
                ("ln_eps", _c_float), ("initializer_range", _c_float), ("hidden_dropout", _c_float),
                ("attn_dropout", _c_float), ("act", _c_int), ("kv_heads", _c_int), ("tie_embeddings", _c_int),
                ("attn_bias", _c_int), ("attn_out_bias", _c_int), ("mlp_bias", _c_int), ("head_dim", _c_int), ("qk_norm", _c_int),
                ("parallel_residual", _c_int), ("pre_ln", _c_int), ("sliding_window", _c_int),
                ("sliding_layers", ctypes.c_ubyte * 128), ("gemma", _c_int), ("query_pre_attn_scalar", _c_float),
                ("llama4", _c_int), ("attention_chunk", _c_int), ("qk_unit_norm", _c_int),
                ("chunked_layers", ctypes.c_ubyte * 128), ("rope_layers", ctypes.c_ubyte * 128),
                ("model_type", ctypes.c_char * 16), ("pe", ctypes.c_char * 512),
                ("architecture", ctypes.c_char * 64)]


class _Batch(ctypes.Structure):  # posemb/model.h
    _fields_ = [("B", _c_int), ("T", _c_int), ("ids", _pint32), ("types", _pint32), ("mask", _pfloat),
                ("positions", _pint32), ("axes", _pint32)]


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_p = ctypes.c_void_p
_version = _fn("posemb_version", ctypes.c_char_p)
try:
    _struct_size = _fn("posemb_struct_size", ctypes.c_size_t, ctypes.c_char_p)
except AttributeError:  # a library from before the check
    raise Error("posemb: %s (version %s) has no posemb_struct_size: a library older than this module"
                % (_lib._name, _version().decode()), "invalid argument") from None
_MIRRORED = {"posemb_error": _Error, "posemb_pe_dims": _PeDims, "posemb_pe_named_matrix": _NamedMatrix,
             "posemb_pe_export": _Export, "posemb_pe_family_doc": _FamilyDoc, "posemb_analyze_opts": _AnalyzeOpts,
             "posemb_config": _Config, "posemb_batch": _Batch}


def _check_layouts():
    """Each struct mirrored here has the library's size, or the library is
    of another version and passing one would corrupt memory. (Sizes only: a
    reordering that keeps the size is not seen; the version says more.)"""
    for name, cls in _MIRRORED.items():
        theirs = _struct_size(name.encode())
        if theirs != ctypes.sizeof(cls):
            raise Error("posemb: %s is %d bytes in %s (version %s) and %d in this module: a library of another "
                        "version" % (name, theirs, _lib._name, _version().decode(), ctypes.sizeof(cls)),
                        "invalid argument")


_check_layouts()
_blas_core = _fn("posemb_blas_core", ctypes.c_char_p)
_blas_core_advice = _fn("posemb_blas_core_advice", ctypes.c_char_p)
_status_name = _fn("posemb_status_name", ctypes.c_char_p, _c_int)
_family_count = _fn("posemb_pe_family_count", _c_int)
_family_doc_at = _fn("posemb_pe_family_doc_at", _FamilyDoc, _c_int)
_tables_new = _fn("posemb_pe_tables_new", _c_int, ctypes.POINTER(_p), ctypes.c_char_p, ctypes.POINTER(_PeDims),
                  _c_int, ctypes.c_uint64, ctypes.POINTER(_Error))
_tables_pe = _fn("posemb_pe_tables_pe", _p, _p)
_tables_export = _fn("posemb_pe_tables_export", ctypes.POINTER(_Export), _p)
_tables_free = _fn("posemb_pe_tables_free", None, _p)
_pe_spec = _fn("posemb_pe_spec", ctypes.c_char_p, _p)
_analyze_defaults = _fn("posemb_analyze_defaults", _AnalyzeOpts)
_analyze_table = _fn("posemb_analyze_table", _c_int, _pfloat, _c_int, _c_int, ctypes.c_char_p,
                     ctypes.POINTER(_AnalyzeOpts), ctypes.c_char_p, _p, ctypes.POINTER(_Error))
_model_load = _fn("posemb_model_load", _c_int, ctypes.POINTER(_p), ctypes.c_char_p, ctypes.POINTER(_Error))
_model_free = _fn("posemb_model_free", None, _p)
_model_config = _fn("posemb_model_config", ctypes.POINTER(_Config), _p)
_model_pe = _fn("posemb_model_pe", _p, _p)
_model_forward = _fn("posemb_model_forward", _c_int, _p, ctypes.POINTER(_Batch), ctypes.POINTER(_Error))
_model_hidden = _fn("posemb_model_hidden", _pfloat, _p, _c_int)
_model_last_hidden = _fn("posemb_model_last_hidden", _pfloat, _p)
_model_attention = _fn("posemb_model_attention", _pfloat, _p, _c_int)
_model_pooled = _fn("posemb_model_pooled", _pfloat, _p)
_model_head_logits = _fn("posemb_model_head_logits", _pfloat, _p, ctypes.POINTER(_Error))
_model_lm_logits = _fn("posemb_model_lm_logits", _c_int, _p, _pfloat, ctypes.POINTER(_Error))

_HEAD_MLM, _HEAD_CLM, _HEAD_CLASSIFY, _HEAD_REGRESS, _HEAD_SPAN = 1, 2, 3, 4, 5


def _raise(status, err):
    raise Error(err.msg.decode("utf-8", "replace"), _status_name(status).decode())


def _copy(ptr, shape):
    """A numpy copy of count floats at ptr (the library reuses its buffers)."""
    n = int(np.prod(shape))
    return np.ctypeslib.as_array(ptr, shape=(n,)).reshape(shape).copy()


def version():
    """The version of the loaded libposemb, e.g. "0.1.0"."""
    return _version().decode()


def blas_core():
    """OpenBLAS's name for the kernels its products run here, e.g. "SkylakeX" (posemb/blas.h)."""
    return _blas_core().decode()


def _warn_slow_blas():
    # OpenBLAS chose its kernels when this process loaded it (numpy may have
    # done so first); only a new process can take others, so say how.
    advice = _blas_core_advice()
    if advice and "OPENBLAS_CORETYPE" not in os.environ:
        import warnings
        warnings.warn("posemb: OpenBLAS runs its %s kernels, without the AVX2 this CPU has (an OpenBLAS older "
                      "than the CPU); start Python with OPENBLAS_CORETYPE=%s for products several times as fast"
                      % (blas_core(), advice.decode()), RuntimeWarning, stacklevel=3)


_warn_slow_blas()


# ---- position embeddings ---------------------------------------------------

def pe_families():
    """{family name: (summary, options)} of every PE family (`posemb pe --list`)."""
    out = {}
    for i in range(_family_count()):
        d = _family_doc_at(i)
        out[d.name.decode()] = (d.summary.decode(), d.options.decode())
    return out


def pe_matrices(spec, length, dim, heads=1, layers=1, seed=0, causal=False, max_len=None):
    """What a PE is, as `posemb pe SPEC --len LENGTH --dim DIM --out x.safetensors`
    exports it: {name: float32 array} (an APE table "ape", relative tables,
    frequencies, per-head bias matrices "bias.headN", ...), learned PEs at their
    initialisation from seed. The first key is the primary matrix; 'none' gives {}."""
    dims = _PeDims(dim=int(dim), n_heads=int(heads), n_layers=int(layers), max_len=int(max_len or length),
                   causal=1 if causal else 0, max_threads=1)
    err = _Error()
    t = _p()
    st = _tables_new(ctypes.byref(t), spec.encode(), ctypes.byref(dims), int(length), int(seed), ctypes.byref(err))
    if st:
        _raise(st, err)
    try:
        ex = _tables_export(t).contents
        out = {}
        for i in range(ex.n):
            m = ex.items[i]
            out[m.name.decode()] = _copy(m.data, (m.rows, m.cols))
        return out
    finally:
        _tables_free(t)


def pe_spec(spec, dim=64, heads=1, max_len=512, causal=False):
    """The canonical spelling of a PE spec, every option spelled out, for a
    model of that width, heads and length (causal: a decoder, which the
    decoder-only PEs xpos, cope and fox need)."""
    dims = _PeDims(dim=int(dim), n_heads=int(heads), n_layers=1, max_len=int(max_len), causal=1 if causal else 0,
                   max_threads=1)
    err = _Error()
    t = _p()
    st = _tables_new(ctypes.byref(t), spec.encode(), ctypes.byref(dims), 2, 0, ctypes.byref(err))
    if st:
        _raise(st, err)
    try:
        return _pe_spec(_tables_pe(t)).decode()
    finally:
        _tables_free(t)


# ---- analysis ----------------------------------------------------------------

def analyze(table, K=32, name="table", seed=0, ridge=0.0, folds=5, pairs=512, dims_frac=0.5, out_dir=None):
    """The indicators and probes `posemb analyze` computes for a 2-D table of
    positions [n, dim] (rows are positions): indicators.json's keys and numbers,
    as a dict. With out_dir, its CSVs, figures and report.html are kept there."""
    a = np.ascontiguousarray(table, dtype=np.float32)
    if a.ndim != 2:
        raise Error("analyze: a table of positions is 2-D [positions, dim], got %d dimensions" % a.ndim, "invalid argument")
    o = _analyze_defaults()
    o.K, o.seed, o.ridge, o.folds, o.pairs, o.dims_frac = int(K), int(seed), float(ridge), int(folds), int(pairs), float(dims_frac)
    o.quiet = 1
    if out_dir is None:
        o.figures = 0
        o.report = 0
    err = _Error()
    with tempfile.TemporaryDirectory(prefix="posemb-") as tmp:
        where = out_dir or os.path.join(tmp, "analysis")
        st = _analyze_table(a.ctypes.data_as(_pfloat), a.shape[0], a.shape[1], name.encode(), ctypes.byref(o),
                            where.encode(), None, ctypes.byref(err))
        if st:
            _raise(st, err)
        with open(os.path.join(where, "indicators.json")) as f:
            return json.load(f)


# ---- models ------------------------------------------------------------------

def mrope_position_ids(segments):
    """M-RoPE's 3D position ids [3, T] (temporal, height, width) for a sequence of
    segments, as HF's Qwen2-VL get_rope_index lays them out: ("text", n) gives n
    tokens whose three ids count on from the last id + 1; ("image", t, h, w) gives
    t x h x w patch tokens (frames, rows, columns of the merged grid, row by row),
    their ids the frame, row and column added to the id the segment starts at.
    Pass the result with a batch axis, ids[:, None, :], as Model.forward's
    position_ids."""
    parts, start = [], 0
    for seg in segments:
        if seg[0] == "text" and len(seg) == 2 and int(seg[1]) > 0:
            ids = np.tile(np.arange(seg[1]) + start, (3, 1))
        elif seg[0] == "image" and len(seg) == 4 and min(seg[1:]) > 0:
            t, h, w = (int(x) for x in seg[1:])
            ids = np.stack([a.ravel() for a in np.meshgrid(np.arange(t), np.arange(h), np.arange(w),
                                                             indexing="ij")]) + start
        else:
            raise Error("mrope_position_ids: %r is not (\"text\", n) or (\"image\", t, h, w) with sizes >= 1"
                        % (seg,), "invalid argument")
        parts.append(ids)
        start = int(ids.max()) + 1
    if not parts:
        raise Error("mrope_position_ids: no segments", "invalid argument")
    return np.concatenate(parts, 1).astype(np.int64)


class Model:
    """A model folder (posemb's or Hugging Face's BERT, RoBERTa, GPT-2, Llama,
    Mistral, Qwen2, Qwen3, GPT-NeoX: config.json + model.safetensors, or
    sharded), loaded into libposemb."""

    def __init__(self, path):
        err = _Error()
        m = _p()
        st = _model_load(ctypes.byref(m), os.fspath(path).encode(), ctypes.byref(err))
        if st:
            _raise(st, err)
        self._m = m
        c = _model_config(m).contents
        self.config = {f: getattr(c, f) for f, _ in _Config._fields_}
        self.config["pe"] = c.pe.decode()
        self.config["architecture"] = c.architecture.decode()
        self.pe = _pe_spec(_model_pe(m)).decode()

    def close(self):
        if getattr(self, "_m", None):
            _model_free(self._m)
            self._m = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None):
        """Runs the model in evaluation mode, as `posemb forward` does, on
        input_ids [B, T] (or [T]), with Hugging Face's position_ids [B, T]
        when given (packed documents, a continuation at an offset; None:
        HF's default), or [3, B, T] for M-RoPE (Qwen2-VL's temporal, height
        and width ids; rope:mrope=): {"last_hidden_state" [B, T, D],
        "hidden_states" (layers + 1 of [B, T, D]), "attentions" (layers of
        [B, H, T, T]), "pooler_output" [B, D] for BERT/RoBERTa with a pooler,
        "logits" for models with a head: [B, T, vocab] (masked or causal LM),
        [B, labels] (classification), [B] (regression), [B, T, 2] (span)}."""
        if self._m is None:
            raise Error("model: closed", "invalid argument")
        ids = np.ascontiguousarray(np.atleast_2d(input_ids), dtype=np.int32)
        B, T = ids.shape
        mask = None if attention_mask is None else np.ascontiguousarray(np.atleast_2d(attention_mask), dtype=np.float32)
        types = None if token_type_ids is None else np.ascontiguousarray(np.atleast_2d(token_type_ids), dtype=np.int32)
        pos = None if position_ids is None else np.asarray(position_ids)
        axes = None
        if pos is not None and pos.ndim == 3:  # [3, B, T] as HF's Qwen2-VL takes them
            if pos.shape != (3, B, T):
                raise Error("forward: 3-axis position_ids are %s, want (3, %d, %d)" % (pos.shape, B, T),
                            "invalid argument")
            pos, axes = None, pos
        pos = None if pos is None else np.atleast_2d(pos)
        for name, x in (("position_ids", pos), ("position_ids", axes)):
            if x is not None and (x.min() < 0 or x.max() >= 2**31 - 1):
                raise Error("forward: %s must be in [0, 2147483647)" % name, "out of range")
        pos = None if pos is None else np.ascontiguousarray(pos, dtype=np.int32)
        axes = None if axes is None else np.ascontiguousarray(axes, dtype=np.int32)
        for name, x in (("attention_mask", mask), ("token_type_ids", types), ("position_ids", pos)):
            if x is not None and x.shape != ids.shape:
                raise Error("forward: %s is %s, input_ids %s" % (name, x.shape, ids.shape), "invalid argument")
        ptr = lambda x, t: None if x is None else x.ctypes.data_as(t)
        b = _Batch(B, T, ids.ctypes.data_as(_pint32), ptr(types, _pint32), ptr(mask, _pfloat), ptr(pos, _pint32),
                   ptr(axes, _pint32))
        err = _Error()
        st = _model_forward(self._m, ctypes.byref(b), ctypes.byref(err))
        if st:
            _raise(st, err)
        return self._outputs(B, T)

    def _outputs(self, B, T):
        c = self.config
        D, H, L = c["hidden"], c["heads"], c["layers"]
        hidden = tuple(_copy(_model_hidden(self._m, i), (B, T, D)) for i in range(L + 1))
        out = {"last_hidden_state": _copy(_model_last_hidden(self._m), (B, T, D)), "hidden_states": hidden,
               "attentions": tuple(_copy(_model_attention(self._m, l), (B, H, T, T)) for l in range(L))}
        pooled = _model_pooled(self._m)
        if pooled:
            out["pooler_output"] = _copy(pooled, (B, D))
        head = c["head"]
        err = _Error()
        if head in (_HEAD_MLM, _HEAD_CLM):
            logits = np.empty((B, T, c["vocab_size"]), dtype=np.float32)
            st = _model_lm_logits(self._m, logits.ctypes.data_as(_pfloat), ctypes.byref(err))
            if st:
                _raise(st, err)
            out["logits"] = logits
        elif head in (_HEAD_CLASSIFY, _HEAD_REGRESS, _HEAD_SPAN):
            p = _model_head_logits(self._m, ctypes.byref(err))
            if not p:
                raise Error(err.msg.decode("utf-8", "replace"))
            shape = {_HEAD_CLASSIFY: (B, c["num_labels"]), _HEAD_REGRESS: (B,), _HEAD_SPAN: (B, T, 2)}[head]
            out["logits"] = _copy(p, shape)
        return out
