#!/usr/bin/env python3
"""The fine-tune slice's hypotheses (README.md: HE1-HE5, HD1-HD3) judged from
its lines: RUN/extend.jsonl (one line per run, scaling and factor) and
RUN/results.jsonl (the trained runs, their perplexity and the RoPE scalings
applied without training). Welch 95% intervals over seeds (the pretrainings)
with scripts/claims' welch_ci, on log-perplexity unless said. A test with
fewer than 2 seeds a side is not judged. Run from the repository's root:
    python3 results/length/extend/verdicts.py RUN [TASK:SEED=FILE ...]
(the optional files: YaRN's passkey without training at 2x, one `posemb
passkey --json` line per file, for HD3). "Within x%" (HE3, HD2) is judged
on the mean over seeds (a point criterion, as fixed); HE4's share of the
gap is on perplexity, as the paper's table; tests are Welch's, as fixed,
although the scalings compared share each pretraining (a paired test would
be narrower)."""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import C, lines  # noqa: E402



def ext_by(run):
    """{(task, scaling, factor): {seed: line}}"""
    out = {}
    for r in lines(os.path.join(run, "extend.jsonl")):
        out.setdefault((r["task"], r["scaling"], r["factor"]), {})[r["seed"]] = r
    return out


def base_by(run):
    """{(task, eval_len): {seed: line}} of the trained rope runs"""
    out = {}
    for r in lines(os.path.join(run, "results.jsonl")):
        if r["pe"] == "rope":
            out.setdefault((r["task"], r["eval_len"]), {})[r["seed"]] = r
    return out


def end_at(line, length, key="perplexity"):
    v = line[key][line["eval_lengths"].index(length)]
    return float("nan") if v is None else v


def curve_at(line, step):
    return line["curve_perplexity"][line["curve_steps"].index(step)]


def welch(name, a, b, held_if, paper=""):
    """Prints a - b with its interval; held_if(eff, lo, hi) says whether the hypothesis held."""
    if len(a) < 2 or len(b) < 2:
        print(f"  {name}: {len(a)} and {len(b)} seeds, not judged")
        return
    eff, lo, hi, p, mde = C.welch_ci(a, b)
    verdict = "held" if held_if(eff, lo, hi) else "did not hold"
    print(f"  {name}: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}], p {p:.3g}, detects |d| >= {mde:.3g} "
          f"({len(a)} and {len(b)} seeds){'; paper ' + paper if paper else ''}: {verdict}")


def logs(cell, f):
    return [math.log(v) for v in map(f, cell.values()) if v == v]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    run = argv[1]
    ext, base = ext_by(run), base_by(run)
    yarn_keys = {}
    for arg in argv[2:]:
        who, path = arg.split("=", 1)
        task, seed = who.split(":")
        for r in lines(path):
            yarn_keys.setdefault((task, r["length"]), {})[int(seed)] = r["passkey_digits"]
    tasks = sorted({k[0] for k in ext})
    n_train = next(iter(next(iter(ext.values())).values()))["n_train"]
    for task in tasks:
        factors = sorted({k[2] for k in ext if k[0] == task})
        for f in factors:
            L = n_train * f
            cell = lambda s: ext.get((task, s, f), {})
            print(f"{task}, fine-tuned at {L} ({f}x):")
            welch("HE1 ln ppl at L, linear - none, step 400", logs(cell("linear"), lambda r: end_at(r, L)),
                  logs(cell("none"), lambda r: end_at(r, L)), lambda e, lo, hi: hi < 0, "ln(6.95/7.69) = -0.101")
            y200 = logs(cell("yarn"), lambda r: curve_at(r, 200))
            l400 = logs(cell("linear"), lambda r: curve_at(r, 400))
            if len(y200) < 2 or len(l400) < 2:
                print(f"  HE2: {len(y200)} and {len(l400)} seeds, not judged")
            else:
                print(f"  HE2 mean ln ppl at L: yarn at 200 {statistics.mean(y200):.4f}, linear at 400 "
                      f"{statistics.mean(l400):.4f} ({len(y200)}, {len(l400)} seeds): "
                      f"{'held' if statistics.mean(y200) <= statistics.mean(l400) else 'did not hold'}")
            if len(y200) >= 2 and len(l400) >= 2:
                eff, lo, hi, p, mde = C.welch_ci(y200, l400)
                print(f"  HE2 interval (not the criterion): yarn at 200 - linear at 400 {eff:+.4f} [{lo:+.4f}, {hi:+.4f}]")
            ratios = [end_at(r, n_train) / base[(task, n_train)][s]["metrics"]["perplexity"] - 1
                      for s, r in cell("linear").items() if s in base.get((task, n_train), {})]
            if len(ratios) < 2:
                print(f"  HE3: {len(ratios)} seeds, not judged")
            else:
                eff, lo, hi = C.one_sample_ci(ratios)[:3]
                print(f"  HE3 linear at {n_train} after fine-tuning / trained, - 1: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] "
                      f"({len(ratios)} seeds; paper -0.010): {'held' if abs(eff) <= 0.02 else 'did not hold'}")
            lin = cell("linear")
            if len(lin) < 2:
                print(f"  HE4: {len(lin)} seeds, not judged")
            else:
                c0, c100, c400 = (statistics.mean(curve_at(r, s) for r in lin.values()) for s in (0, 100, 400))
                share = (c0 - c100) / (c0 - c400) if c0 != c400 else float("nan")
                print(f"  HE4 linear's gap closed by step 100: {share:.3f} ({len(lin)} seeds; paper 0.98 by 200): "
                      f"{'held' if share >= 0.8 else 'did not hold'}")
            if f == 4:
                lk = [end_at(r, L, "passkey_digits") for r in cell("linear").values()]
                nk = [end_at(r, L, "passkey_digits") for r in cell("none").values()]
                if lk:
                    print(f"  HE5 passkey digits at {L}: linear {statistics.mean(lk):.3f}, none "
                          f"{statistics.mean(nk) if nk else float('nan'):.3f}")
                welch("HE5 digits, linear - none", lk, nk, lambda e, lo, hi: lo > 0 and statistics.mean(lk) >= 0.9)
        drope = next((v for k, v in ext.items() if k[0] == task and k[1] == "drope"), {})
        if not drope:
            continue
        print(f"{task}, DroPE:")
        for m in (4, 8, 16):
            L = n_train * m
            rows = base.get((task, L), {})
            scalings = sorted({s for r in rows.values() for s in r.get("scaled", {})})
            if not scalings:
                continue
            best = min(scalings, key=lambda s: statistics.mean(math.log(r["scaled"][s]) for r in rows.values()))
            welch(f"HD1 ln ppl at {L}, drope - {best} (no training)", logs(drope, lambda r: end_at(r, L)),
                  [math.log(r["scaled"][best]) for r in rows.values()], lambda e, lo, hi: hi < 0)
        ratios = [end_at(r, n_train) / base[(task, n_train)][s]["metrics"]["perplexity"] - 1
                  for s, r in drope.items() if s in base.get((task, n_train), {})]
        if len(ratios) < 2:
            print(f"  HD2: {len(ratios)} seeds, not judged")
        else:
            eff, lo, hi = C.one_sample_ci(ratios)[:3]
            print(f"  HD2 drope at {n_train} / trained, - 1: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] ({len(ratios)} seeds; "
                  f"paper +0.0005): {'held' if abs(eff) <= 0.01 else 'did not hold'}")
        yk = yarn_keys.get((task, 2 * n_train), {})
        welch(f"HD3 digits at {2 * n_train}, drope - yarn (no training)",
              [end_at(r, 2 * n_train, "passkey_digits") for r in drope.values()], list(yk.values()),
              lambda e, lo, hi: lo > 0)


if __name__ == "__main__":
    main(sys.argv)
