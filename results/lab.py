"""What the lab notebooks' verdicts.py scripts share: scripts/claims loaded as
a module (its intervals, power and verdict rule), a reader of JSON-lines
files and of a safetensors file's header. A script two folders below results/ imports it with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from lab import C, lines"""
import csv
import importlib.machinery
import importlib.util
import json
import os
import struct
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def module(path, name):
    """The Python file path loaded as a module called name: a script beside others of the same file name (judge.py,
    tables.py) or without a .py suffix (scripts/claims) loads under a name of its own."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    loaded = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(loaded)
    return loaded


C = module(os.path.join(ROOT, "scripts", "claims"), "claims")


def lines(path):
    """The JSON objects of a JSON-lines file, blank lines skipped."""
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def st_header(path):
    """(the header's {name: {dtype, shape, data_offsets}}, the data section's offset in the file) of a
    safetensors file; exits naming the file when the header's length is not believable."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        if n > 100_000_000:
            sys.exit(f"{path}: a safetensors header of {n} bytes")
        return json.loads(f.read(n)), 8 + n


def write_points(path, rows, lineterminator="\r\n"):
    """The long table `posemb plot lines` reads (panel, series, x, y), written whole, then renamed; lineterminator
    as csv.writer's (its default, CRLF, unless a caller's committed table has other line ends)."""
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.writer(f, lineterminator=lineterminator)
        w.writerow(["panel", "series", "x", "y"])
        w.writerows(rows)
    os.replace(path + ".tmp", path)


def show(name, x, judged, rule, claim=None, paper=None, interim="interim, not judged"):
    """One hypothesis on the values x ({unit: effect}): the mean with its 95% interval (Student's t), p and the
    effect detected at 80% power, then rule(lo, hi) if judged, else interim; claim: (id, sign) of the paper's
    claim it tests, printed under scripts/claims' verdict with paper[id], the paper's effect in this unit."""
    if len(x) < 2:
        print(f"{name}: not judged ({len(x)} model(s))")
        return
    eff, lo, hi, p, mde = C.one_sample_ci(list(x.values()))
    print(f"{name}: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] p = {p:.3g}, detects {mde:.3g}, n {len(x)}: "
          f"{rule(lo, hi) if judged else interim}")
    if claim and judged:
        v, why = C.verdict(eff, lo, hi, mde, paper[claim[0]], claim[1])
        print(f"  {claim[0]} as the paper's claim: {v}" + (f" ({why})" if why else ""))


def below0(lo, hi):
    return "held" if hi < 0 else ("reversed" if lo > 0 else "did not hold (the interval spans 0)")


def reported(lo, hi):
    return "reported (no verdict)"


def minus(a, b):
    return {k: a[k] - b[k] for k in sorted(set(a) & set(b))}
