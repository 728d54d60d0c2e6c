"""The length study's pre-registered test 2 (docs/length/README.md, "What seeds 2
and 3 test", fixed on 2026-11-27 before any run of seeds 2 and 3): GPT-2's
passkey at 128 with its tied head, in each seed given.

  (a) keys at 128 (the study's "passkey" at eval_len 128): `none`, `alibi`,
      `t5` and `sandwich` below 0.5; `ape`, `sin`, `rope` and `kerple` at
      least 0.9;
  (b) by needle_attention.py's measure on those eight models: each that copies
      fewer than half of the digits has its strongest head's mean mass on the
      digit to copy below 0.2; each that copies at least 0.95 of them, above 0.6.

Prints one row per model and names each that breaks a prediction. Exit status
0 when every prediction holds, 1 when one breaks, 2 when a run or a model is
missing (the test cannot be read yet). On seed 1 it reproduces the readings the
predictions were made from.

Usage: PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so \\
           python3 docs/length/passkey_prediction.py RUN --seeds 2,3
RUN holds the study's results.jsonl and models/ (its --out folder).
"""
import argparse
import json
import os
import sys

FAIL_KEYS = ("none", "alibi", "t5", "sandwich")  # predicted below 0.5 of the keys
PASS_KEYS = ("ape", "sin", "rope", "kerple")  # predicted at least 0.9


def keys_at_128(run, seed):
    """pe -> the study's keys retrieved at 128 for GPT-2 runs of this seed; a later line wins."""
    path = os.path.join(run, "results.jsonl")
    try:
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        sys.exit("passkey_prediction: %s: %s" % (path, e))
    return {d["pe"]: d["metrics"]["passkey"] for d in lines
            if d.get("task") == "gpt2" and d.get("seed") == seed and d.get("eval_len") == 128}


def broken(pe, keys, copied, mass):
    """The predictions this model breaks, as phrases."""
    out = []
    if pe in FAIL_KEYS and keys >= 0.5:
        out.append("keys %.2f, predicted below 0.5" % keys)
    if pe in PASS_KEYS and keys < 0.9:
        out.append("keys %.2f, predicted at least 0.9" % keys)
    if copied < 0.5 and mass >= 0.2:
        out.append("copies %.2f of the digits with a head at %.2f, predicted below 0.2" % (copied, mass))
    if copied >= 0.95 and mass <= 0.6:
        out.append("copies %.2f of the digits with a head at %.2f, predicted above 0.6" % (copied, mass))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--seeds", required=True, help="comma-separated, e.g. 2,3")
    args = ap.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ablation-tied"))
    import posemb  # noqa: E402 (after the usage check)
    from needle_attention import measure  # noqa: E402

    missing, breaks = [], []
    print("| seed | PE | keys at 128 | digits copied | strongest head on the digit | breaks |")
    print("|---|---|---|---|---|---|")
    for seed in seeds:
        keys = keys_at_128(args.run, seed)
        for pe in FAIL_KEYS + PASS_KEYS:
            model = os.path.join(args.run, "models", "gpt2-%s-s%d" % (pe, seed))
            if pe not in keys or not os.path.isfile(os.path.join(model, "model.safetensors")):
                missing.append("gpt2 %s seed %d" % (pe, seed))
                continue
            with posemb.Model(model) as m:
                copied, mass, _, _ = measure(m)
            why = broken(pe, keys[pe], copied, mass)
            breaks += ["gpt2 %s seed %d: %s" % (pe, seed, w) for w in why]
            print("| %d | %s | %.2f | %.2f | %.2f | %s |" % (seed, pe, keys[pe], copied, mass, "; ".join(why) or "-"))
    for b in breaks:
        print("breaks a prediction: " + b)
    if missing:
        print("not yet run: " + ", ".join(missing))
        sys.exit(2)
    print("every prediction holds" if not breaks else "%d prediction(s) broken" % len(breaks))
    sys.exit(1 if breaks else 0)


if __name__ == "__main__":
    main()
