"""What the lab notebooks' verdicts.py scripts share: scripts/claims loaded as
a module (its intervals, power and verdict rule) and a reader of JSON-lines
files. A script two folders below results/ imports it with
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from lab import C, lines"""
import importlib.machinery
import importlib.util
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _claims():
    loader = importlib.machinery.SourceFileLoader("claims", os.path.join(ROOT, "scripts", "claims"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("claims", loader))
    loader.exec_module(module)
    return module


C = _claims()


def lines(path):
    """The JSON objects of a JSON-lines file, blank lines skipped."""
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]
