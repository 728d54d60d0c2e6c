"""The length study's pre-registered test 2 (results/length/README.md, "What seeds 2
and 3 test", fixed on 2026-11-27 before any run of seeds 2 and 3): GPT-2's
passkey at 128 with its tied head, in each seed given.

  (a) keys at 128 (the study's "passkey" at eval_len 128): `none`, `alibi`,
      `t5` and `sandwich` below 0.5; `ape`, `sin`, `rope` and `kerple` at
      least 0.9;
  (b) by needle_attention.py's measure on those eight models (its own 50
      prompts; "copies": the share of digits its argmax gets right; "strongest
      head's mean mass": for each digit the attention mass on the needle's
      copies of that digit of the head that puts most there, averaged over
      the digits): each that copies fewer than half of the digits has that
      mass below 0.2; each that copies at least 0.95 of them, above 0.6.

Prints one row per model and names each that breaks a prediction. Exit status
1 when a prediction breaks (final, whatever the missing runs do), else 2 when
a results line or a model is missing (the test cannot be read yet), else 0;
3 on an error (unreadable RUN, bad arguments, no posemb module). On seed 1 it
reproduces the readings the predictions were made from.

Usage: PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so \\
           python3 results/length/passkey_prediction.py RUN --seeds 2,3 [--readings FILE]
RUN holds the study's results.jsonl and models/ (its --out folder). The
study runs over several sessions whose models do not outlive them, so each
model's two readings are kept in FILE (default: passkey_readings.jsonl beside
this program; one JSON line per seed and PE, rewritten whole when a model
present in RUN is measured), and a model no longer in RUN is read from there.
"""
import argparse
import json
import os
import sys

FAIL_KEYS = ("none", "alibi", "t5", "sandwich")  # predicted below 0.5 of the keys
PASS_KEYS = ("ape", "sin", "rope", "kerple")  # predicted at least 0.9


def fail(msg):
    print("passkey_prediction: " + msg, file=sys.stderr)
    sys.exit(3)


def keys_at_128(run, seeds):
    """(seed, pe) -> the study's keys retrieved at 128 for GPT-2's runs of these seeds; a later line wins."""
    path = os.path.join(run, "results.jsonl")
    try:
        with open(path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        fail("%s: %s" % (path, e))
    try:
        return {(d["seed"], d["pe"]): d["metrics"]["passkey"] for d in lines
                if d.get("task") == "gpt2" and d.get("seed") in seeds and d.get("eval_len") == 128}
    except (KeyError, TypeError) as e:
        fail("%s: a GPT-2 line at 128 without %s" % (path, e))


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


def seed_list(text):
    try:
        seeds = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("'%s' is not a comma-separated list of integers" % text)
    return seeds


def load_readings(path):
    """(seed, pe) -> (copied, mass) kept from earlier sessions; none when the file does not exist."""
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        return {(int(r["seed"]), str(r["pe"])): (float(r["copied"]), float(r["mass"])) for r in rows}
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail("%s: not a file of readings (%r)" % (path, e))


def save_readings(path, readings):
    """Writes every reading, sorted, whole or not at all."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "w") as f:
            for (seed, pe), (copied, mass) in sorted(readings.items()):
                f.write(json.dumps({"seed": seed, "pe": pe, "copied": copied, "mass": mass}) + "\n")
        os.replace(tmp, path)
    except OSError as e:
        fail("%s: %s" % (path, e))


class Parser(argparse.ArgumentParser):
    def error(self, message):  # exit 3, as every error here; 2 means "not yet run"
        fail(message)


def main():
    ap = Parser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run")
    ap.add_argument("--seeds", required=True, type=seed_list, help="comma-separated, e.g. 2,3")
    ap.add_argument("--readings", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "passkey_readings.jsonl"),
                    help="the readings kept of models no longer in RUN (default: passkey_readings.jsonl here)")
    args = ap.parse_args()
    readings = load_readings(args.readings)
    measured = False
    keys = keys_at_128(args.run, args.seeds)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "ablation-tied"))
    try:
        import posemb
        from needle_attention import measure
    except (ImportError, OSError) as e:
        fail("the posemb module: %s (PYTHONPATH=python POSEMB_LIBRARY=build/libposemb.so)" % e)

    missing, breaks = [], []
    print("| seed | PE | keys at 128 | digits copied | strongest head on the digit | breaks |")
    print("|---|---|---|---|---|---|")
    for seed in args.seeds:
        for pe in FAIL_KEYS + PASS_KEYS:
            model = os.path.join(args.run, "models", "gpt2-%s-s%d" % (pe, seed))
            if (seed, pe) not in keys:
                missing.append("gpt2 %s seed %d: no results line at 128" % (pe, seed))
                continue
            if os.path.isfile(os.path.join(model, "model.safetensors")):
                try:
                    with posemb.Model(model) as m:
                        copied, mass, _, _ = measure(m)
                except Exception as e:  # the module's errors name the file and the problem
                    fail("%s: %s" % (model, e))
                readings[(seed, pe)] = (copied, mass)
                measured = True
            elif (seed, pe) in readings:
                copied, mass = readings[(seed, pe)]
            else:
                missing.append("gpt2 %s seed %d: no model at %s and no reading kept" % (pe, seed, model))
                continue
            why = broken(pe, keys[(seed, pe)], copied, mass)
            breaks += ["gpt2 %s seed %d: %s" % (pe, seed, w) for w in why]
            print("| %d | %s | %.2f | %.2f | %.2f | %s |" % (seed, pe, keys[(seed, pe)], copied, mass,
                                                       "; ".join(why) or "-"))
    if measured:
        save_readings(args.readings, readings)
    for b in breaks:
        print("breaks a prediction: " + b)
    for m in missing:
        print("missing: " + m)
    if breaks:
        print("%d prediction(s) broken" % len(breaks))
        sys.exit(1)
    if missing:
        print("not all runs are in: the test cannot be read yet")
        sys.exit(2)
    print("every prediction holds")
    sys.exit(0)


if __name__ == "__main__":
    main()
