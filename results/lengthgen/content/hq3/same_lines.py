"""Whether a retrained run's study lines equal the slice's committed ones
(results.jsonl beside this folder): same PE, task, seed and length, and the
same metrics, error counts and chances. Prints one line per run folder.

    python3 same_lines.py RUN_DIR..."""
import json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
KEYS = ("metrics", "errors", "errors_chance", "collapsed")


def lines(path):
    out = {}
    for l in open(path):
        d = json.loads(l)
        out[(d["pe"], d["task"], d["seed"], d["eval_len"])] = {k: d.get(k) for k in KEYS}
    return out


committed = lines(os.path.join(here, "..", "results.jsonl"))
for run in sys.argv[1:]:
    mine = lines(os.path.join(run, "results.jsonl"))
    same = [k for k in mine if committed.get(k) == mine[k]]
    print("%s: %d of %d lines equal the committed ones (%s)" % (os.path.basename(run.rstrip("/")), len(same), len(mine),
          ", ".join("%s %s seed %d at %d" % k for k in sorted(mine))))
