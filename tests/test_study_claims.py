"""scripts/study-claims: its statistics against values worked out elsewhere
(SciPy's Welch test, closed forms) and its reading of a real-data study,
including the comparisons it cannot make yet; and the claims register
posemb's study report computes in C against scripts/claims' (POSEMB_BIN: the
built posemb). Standard library only."""
import contextlib
import csv
import shutil
import subprocess
import importlib.machinery
import importlib.util
import io
import json
import math
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
loader = importlib.machinery.SourceFileLoader("study_claims", os.path.join(HERE, "..", "scripts", "study-claims"))
spec = importlib.util.spec_from_loader("study_claims", loader)
claims = importlib.util.module_from_spec(spec)
loader.exec_module(claims)
claims.DRAWS = 20000  # the tests' p-values are checked to 0.0015; the script's default is 10 times finer


class Statistics(unittest.TestCase):
    def test_welch(self):
        # scipy.stats.ttest_ind([1, 2, 3], [4, 5, 6], equal_var=False): t = -3.674234614, p = 0.021311641
        t, p, mx, my = claims.welch([1, 2, 3], [4, 5, 6])
        self.assertAlmostEqual(t, -3.674234614, places=8)
        self.assertAlmostEqual(p, 0.021311641, places=8)
        # unequal variances and sizes, by hand: t = (2.5 - 6) / sqrt(5/12 + 16/3), Welch-Satterthwaite df =
        # (23/4)^2 / ((5/12)^2 / 3 + (16/3)^2 / 2); p by integrating Student's t density (Simpson's rule)
        t, p, _, _ = claims.welch([1, 2, 3, 4], [2, 6, 10])
        self.assertAlmostEqual(t, -3.5 / math.sqrt(23 / 4), places=12)
        df = (23 / 4) ** 2 / ((5 / 12) ** 2 / 3 + (16 / 3) ** 2 / 2)
        c = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2))
        n, h = 20000, abs(t) / 20000
        area = sum((1 if i in (0, n) else 4 if i % 2 else 2) * c * (1 + (i * h) ** 2 / df) ** (-(df + 1) / 2)
                   for i in range(n + 1)) * h / 3
        self.assertAlmostEqual(p, 1 - 2 * area, places=9)

    def test_incomplete_beta(self):
        self.assertAlmostEqual(claims.incomplete_beta(2, 2, 0.5), 0.5, places=12)
        self.assertAlmostEqual(claims.incomplete_beta(1, 1, 0.3), 0.3, places=12)  # the uniform's CDF
        self.assertAlmostEqual(claims.incomplete_beta(2, 1, 0.3), 0.09, places=12)  # x^2

    def test_spearman(self):
        self.assertEqual(claims.spearman([1, 2, 3, 4], [10, 20, 30, 45]), 1.0)
        self.assertEqual(claims.spearman([1, 2, 3, 4], [4, 3, 2, 1]), -1.0)
        self.assertAlmostEqual(claims.spearman([1, 2, 2, 3], [1, 3, 2, 4]), 0.9486833, places=6)  # ties averaged


class RealData(unittest.TestCase):
    """A real-data study's lines: every PE scores base + seed / 100 on a task, so group means are known."""
    BASE = {"ape": 0.5, "sin": 0.6, "lsin": 0.7, "rpe": 0.2, "srpe": 0.3, "lsrpe": 0.4}

    def run_claims(self, skip=None, blas=None, offset=None):
        """blas(pe, task, seed): the kernels a line records, or None; offset: {task: added to every score}."""
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            for pe, base in self.BASE.items():
                for task in claims.GLUE + claims.LOCATE:
                    for seed in (1, 2, 3):
                        for length in (128, 256, 512) if task in claims.LOCATE else (128,):
                            if (pe, task, seed) == skip:
                                continue
                            score = base + seed / 100 + length / 10000 + (offset or {}).get(task, 0)
                            m = {"f1" if task in claims.LOCATE else "accuracy": score}
                            line = {"pe": pe, "task": task, "seed": seed, "eval_len": length, "metrics": m}
                            if blas and blas(pe, task, seed):
                                line["blas"] = blas(pe, task, seed)
                            f.write(json.dumps(line) + "\n")
        out = io.StringIO()
        sys.argv = ["study-claims", d]
        with contextlib.redirect_stdout(out):
            claims.main()
        return out.getvalue().splitlines()

    def test_groups(self):
        lines = self.run_claims()
        # APEs: 0.5, 0.6, 0.7 + 0.02 (mean seed) + 0.0128; RPEs 0.2, 0.3, 0.4 + the same
        self.assertTrue(lines[0].startswith("classification, APEs vs RPEs (128 tokens): 0.633 vs 0.333"), lines[0])
        self.assertTrue(lines[1].startswith("span, RPEs vs APEs (128 tokens): 0.333 vs 0.633"), lines[1])
        self.assertTrue(lines[2].startswith("span at 2x, RPEs vs APEs (256 tokens): 0.346 vs 0.646"), lines[2])
        self.assertTrue(lines[3].startswith("span at 4x, RPEs vs APEs (512 tokens): 0.371 vs 0.671"), lines[3])
        self.assertTrue(lines[4].startswith("lsin vs sin, six tasks (128 tokens): 0.733 vs 0.633"), lines[4])
        self.assertTrue(lines[6].startswith("span at 2x, sin vs ape (256 tokens): 0.646 vs 0.546"), lines[6])
        self.assertTrue(lines[7].startswith("span at 4x, sin vs ape (512 tokens): 0.671 vs 0.571"), lines[7])
        # no analysis/ folder: the correlations wait for the indicators
        self.assertIn("span vs identical-word indicators: not yet testable (the indicators of 0 PEs, 4 needed)",
                      lines)

    @staticmethod
    def line(lines, prefix):
        hits = [x for x in lines if x.startswith(prefix)]
        if len(hits) != 1:
            raise AssertionError(f"{len(hits)} lines start with {prefix!r}: {lines}")
        return hits[0]

    def test_glue_alone_and_per_task(self):
        # each task its own offset, so a row that reads another task's scores (or pools them) shows it
        off = {t: i / 100 for i, t in enumerate(claims.GLUE)}
        lines = self.run_claims(offset=off)
        self.line(lines, "lsin vs sin, GLUE (128 tokens): 0.753 vs 0.653")
        self.line(lines, "lsrpe vs srpe, GLUE (128 tokens): 0.453 vs 0.353")
        self.assertIn("Each classification task, APEs vs RPEs: 5 tests, Bonferroni: p < 0.0100", lines)
        for i, task in enumerate(claims.GLUE):
            # per (PE, seed): 9 pairs each; per PE: means 0.62, 0.72, 0.82 against 0.22, 0.32, 0.42 (+ the same),
            # Welch as scipy's ttest_ind([4, 5, 6], [1, 2, 3], equal_var=False): t = 3.674, p = 0.0213
            row = self.line(lines, f"{task}, APEs vs RPEs (128 tokens): {0.633 + i / 100:.3f} vs {0.333 + i / 100:.3f}")
            self.assertIn("; per PE (3 vs 3 pretrainings): t = 3.67, p = 0.0213", row)
        self.assertIn("; per PE: one pretraining each, no test", self.line(lines, "lsin vs sin, GLUE"))
        self.assertFalse(any("BLAS kernels" in x for x in lines), lines)  # one machine: nothing to say

    def test_kernels_named_when_mixed(self):
        # one srpe line (RTE, seed 2) from another CPU's kernels: exactly the comparisons that pool it say so
        lines = self.run_claims(blas=lambda pe, task, seed: "Cooperlake" if (pe, task, seed) == ("srpe", "RTE", 2)
                                else None)
        mixed = " [BLAS kernels: unrecorded; Cooperlake, unrecorded]"
        for prefix in ("classification, APEs vs RPEs", "RTE, APEs vs RPEs", "lsrpe vs srpe, GLUE"):
            self.assertTrue(self.line(lines, prefix).endswith(mixed), prefix)
        for prefix in ("CoLA, APEs vs RPEs", "STS-B, APEs vs RPEs", "lsin vs sin, GLUE"):
            self.assertNotIn("BLAS kernels", self.line(lines, prefix))
        # both groups mixed alike are still mixed
        lines = self.run_claims(blas=lambda pe, task, seed: "Cooperlake" if (task, seed) == ("RTE", 2) and pe in
                                ("ape", "srpe") else None)
        self.assertTrue(self.line(lines, "RTE, APEs vs RPEs").endswith(
            " [BLAS kernels: Cooperlake, unrecorded; Cooperlake, unrecorded]"))

    def test_missing_run(self):
        lines = self.run_claims(skip=("lsrpe", "RTE", 3))
        self.assertIn("lsrpe vs srpe, six tasks (128 tokens): not yet testable (no run of lsrpe CoLA"[:60],
                      "\n".join(lines))
        self.assertIn("classification, APEs vs RPEs (128 tokens): not yet testable (no run of lsrpe RTE at 128 "
                      "tokens, seed 3)", lines)
        self.assertTrue(lines[1].startswith("span, RPEs vs APEs (128 tokens): 0.333 vs 0.633"), lines[1])


class OwnModels(unittest.TestCase):
    """A synthetic study with each task's own models' indicators (analysis/PE/TASK/indicators.json). Scores and
    indicators differ by task and length, so reading another task's or length's numbers flips a sign."""
    BASE = {"ape": 0.5, "sin": 0.6, "lsin": 0.7, "rpe": 0.2, "srpe": 0.3, "rope:base=500": 0.4}
    # (task, length) -> the score's direction in base; between at 32 tokens scores a constant
    SCORE = {("offset", 32): 1, ("offset", 256): -1, ("order", 32): -1, ("between", 32): 0}
    TI = {"order": -1}  # TI = sign * base (default sign 1); MONO constant; SYM = -TI

    def make(self):
        d = tempfile.mkdtemp()
        with open(os.path.join(d, "results.jsonl"), "w") as f:
            for pe, base in self.BASE.items():
                for task in claims.CLS + claims.SPAN + ["reverse"]:
                    for seed in (1, 2, 3):
                        for length in (32, 256):
                            sign = self.SCORE.get((task, length), 1)
                            score = 0.5 if sign == 0 else sign * base + seed / 100
                            f.write(json.dumps({"pe": pe, "task": task, "seed": seed, "eval_len": length,
                                                "metrics": {"accuracy": score}}) + "\n")
                    folder = os.path.join(d, "analysis", pe.replace(":", "_").replace("=", "_"), task)
                    os.makedirs(folder)
                    ti = self.TI.get(task, 1) * base
                    with open(os.path.join(folder, "indicators.json"), "w") as f2:
                        json.dump({"n": 32, "identical": {"ti": ti, "mono": 0.5, "sym": -ti}}, f2)
        return d

    def claims_of(self, d):
        out = io.StringIO()
        sys.argv = ["study-claims", d]
        with contextlib.redirect_stdout(out):
            claims.main()
        return out.getvalue().splitlines()

    def test_per_task(self):
        lines = self.claims_of(self.make())
        self.assertIn("Each task against its own models' indicators: 27 correlations, Bonferroni: p < 0.0019", lines)
        # the synthetic study's classification tasks one by one (this study has no lsrpe: not yet testable)
        self.assertIn("Each classification task, APEs vs RPEs: 2 tests, Bonferroni: p < 0.0250", lines)
        self.assertIn("order, APEs vs RPEs (32 tokens): not yet testable (no run of lsrpe order at 32 tokens, seed 1)",
                      lines)

        def line(prefix):
            hits = [x for x in lines if x.startswith(prefix)]
            self.assertEqual(len(hits), 1, (prefix, lines))
            return hits[0]

        # 6 PEs: rope:base=500's indicators found in analysis/rope_base_500/ (posemb's folder rule)
        ti = line("offset vs its models' identical-word TI (6 PEs): Spearman rho = 1.00, permutation p = ")
        self.assertAlmostEqual(float(ti.rsplit(" ", 1)[1]), 2 / 720, delta=0.0015)  # |rho| = 1 under 2 of 6! orders
        line("offset vs its models' identical-word SYM (6 PEs): Spearman rho = -1.00")
        line("offset vs its models' identical-word MONO (6 PEs): undefined (the indicator or the score is constant)")
        line("offset at 8x vs its models' identical-word TI (6 PEs): Spearman rho = -1.00")  # 256 tokens' scores
        line("order vs its models' identical-word TI (6 PEs): Spearman rho = 1.00")  # order's scores and indicators
        line("between vs its models' identical-word TI (6 PEs): undefined")  # a constant score
        line("retrieve vs its models' identical-word TI (6 PEs): Spearman rho = 1.00")
        # no analysis/PE/indicators.json (the first task's model in the report's place): those wait
        self.assertIn("span vs identical-word indicators: not yet testable (the indicators of 0 PEs, 4 needed)", lines)

    def test_mixed_positions(self):
        """Indicators over another number of positions (an analysis kept from before the study's rule) are not
        correlated with the others: the test says which PEs read how many positions."""
        d = self.make()
        path = os.path.join(d, "analysis", "rpe", "offset", "indicators.json")
        with open(path) as f:
            j = json.load(f)
        with open(path, "w") as f:
            json.dump(dict(j, n=256), f)
        lines = self.claims_of(d)
        self.assertIn("offset vs its models' identical-word indicators: not yet testable (indicators over different "
                      "numbers of positions (32: ape, sin, lsin, srpe, rope:base=500; 256: rpe))", lines)
        self.assertTrue(any(x.startswith("order vs its models' identical-word TI (6 PEs): Spearman rho = 1.00")
                            for x in lines), lines)

    def test_bad_indicators(self):
        d = self.make()
        path = os.path.join(d, "analysis", "rpe", "offset", "indicators.json")
        with open(path, "w") as f:
            f.write("{")
        with self.assertRaises(SystemExit) as e:
            self.claims_of(d)
        self.assertTrue(str(e.exception).startswith(f"study-claims: {d}/analysis/rpe/offset/indicators.json: not an "
                                                    "analysis's indicators.json"), str(e.exception))


BIN = os.environ.get("POSEMB_BIN")
RESULTS = os.path.join(HERE, "..", "results")


@unittest.skipUnless(BIN, "POSEMB_BIN (the built posemb) is not set")
class ReportRegister(unittest.TestCase):
    """posemb study --report on a copy of each committed study (its lines and analysis/ alone: no model) writes
    claims.csv by the rules of scripts/claims: its rows are results/claims.csv's rows of that testbed, in the same
    order, with the same numbers (to the 4 significant digits both write) and verdicts. Two implementations of one
    rule, each checking the other."""
    COLS = ("claim_id", "testbed", "effect", "ci_lo", "ci_hi", "paper_effect", "mde", "p", "verdict")

    def report(self, study, keep, args):
        """The claims.csv rows of posemb study ARGS --report on a folder holding study's files named in keep."""
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        run = os.path.join(d, "run")
        os.makedirs(run)
        for name in keep:
            src = os.path.join(RESULTS, study, name)
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(run, name))
        done = subprocess.run([BIN, "study", *args, "--report", "--out", run], capture_output=True, text=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        claims = os.path.join(run, "claims.csv")
        self.assertTrue(os.path.exists(os.path.join(run, "claims.png")))
        # the figure's own reader takes the file: every verdict named, every interval whole
        drawn = subprocess.run([BIN, "plot", "forest", claims, "--out", os.path.join(d, "forest.png")],
                               capture_output=True, text=True)
        self.assertEqual(drawn.returncode, 0, drawn.stderr)
        with open(os.path.join(run, "report.html")) as f:
            html = f.read()
        self.assertLess(html.index("<h2>The answer</h2>"), html.index("<h2>How the study ran</h2>"))
        with open(claims, newline="") as f:
            return list(csv.DictReader(f))

    def committed(self, evidence):
        """results/claims.csv's rows of one testbed (W5 is a closed form, no study's)."""
        with open(os.path.join(RESULTS, "claims.csv"), newline="") as f:
            return [r for r in csv.DictReader(f) if r["evidence"] == evidence and r["claim_id"] != "W5"]

    def same(self, mine, theirs):
        self.assertTrue(theirs)
        self.assertEqual([tuple(r[c] for c in self.COLS) for r in mine],
                         [tuple(r[c] for c in self.COLS) for r in theirs])

    def test_synthetic(self):
        rows = self.report("study-default", ["results.jsonl", "analysis"], [])
        self.same(rows, self.committed("docs/study.md#the-seed-papers-claims-one-by-one"))

    def test_real_data(self):
        # --data names the text the study would train on; the report reads none of it
        rows = self.report("study-data", ["results.jsonl", "analysis"], ["--data", "/nonexistent"])
        self.same(rows, self.committed("results/study-data/README.md"))

    def test_length(self):
        rows = self.report("length", ["results.jsonl", "attention.jsonl"], ["--length", "--data", "/nonexistent"])
        self.same(rows, self.committed("docs/study-length-results.md"))


if __name__ == "__main__":
    unittest.main()
