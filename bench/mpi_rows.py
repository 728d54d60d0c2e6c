"""bench/run --mpi: data parallelism on this machine, posemb against PyTorch.

posemb: `posemb train` as a user runs it (BERT of train-mini's size, 4 x 256,
vocabulary 30522, masked LM on WikiText-2 from ../shared/data, a global batch
of 32 x 128 tokens as 2 micro-batches of 16) at 1 rank x 1 thread, 1 rank x 2
threads and `mpirun -np 2` x 1 thread; its own tokens/s over the run.
PyTorch: bench/torch_train_mini.py (train-mini) at 1 and 2 threads, and
bench/torch_ddp_mini.py (DistributedDataParallel, gloo) at 2 ranks x 1 thread.
The study's runs: the wall time of `posemb study` on STUDY_CONFIG (24 runs of
the default's size: 4 PEs x 3 tasks x 2 seeds, 350 steps) at 1 rank x 1
thread, 1 rank x 2 threads, `mpirun -np 2` and the study's own 2 worker
processes (--jobs 2); it has no PyTorch peer (train-small is its step).
The layouts take turns; each row is the median of the repeats. The ratio
that matters: 2 ranks over 1 rank at one thread each (target >= 1.7)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "..", "shared", "data")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
LAYOUTS = [(1, 1), (1, 2), (2, 1)]  # (ranks, threads per rank)
STUDY_CONFIG = {"pes": ["none", "ape", "rope", "alibi"], "tasks": ["order", "offset", "reverse"], "seeds": [1, 2],
                "analyze": 0}
STUDY_LAYOUTS = [(1, 1, 1), (1, 2, 1), (2, 1, 1), (1, 1, 2)]  # (ranks, threads, --jobs)


def study_row(build, ranks, threads, jobs):
    """Wall seconds of the study on STUDY_CONFIG, or {"error": ...}."""
    tmp = tempfile.mkdtemp(prefix="posemb-bench-study-")
    with open(os.path.join(tmp, "cfg.json"), "w") as f:
        json.dump(STUDY_CONFIG, f)
    cmd = [os.path.join(build, "posemb"), "study", os.path.join(tmp, "cfg.json"), "--jobs", str(jobs),
           "--out", os.path.join(tmp, "out")]
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "-x", "OMP_NUM_THREADS"] + cmd
    start = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **MPI_ENV, OMP_NUM_THREADS=str(threads)))
    wall = time.monotonic() - start
    shutil.rmtree(tmp, ignore_errors=True)
    if p.returncode:
        lines = p.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit status {p.returncode}"}
    return {"seconds": round(wall, 2)}


def posemb_row(build, ranks, threads, steps):
    """tokens/s of one `posemb train` run, or {"error": ...}."""
    out = tempfile.mkdtemp(prefix="posemb-bench-mpi-")
    cmd = [os.path.join(build, "posemb"), "train", "--model", "bert", "--data", os.path.join(DATA, "wikitext-2"),
           "--vocab", os.path.join(DATA, "bert-base-uncased", "vocab.txt"), "--layers", "4", "--hidden", "256",
           "--heads", "4", "--seq-len", "128", "--batch-size", "16", "--accum", "2", "--steps", str(steps),
           "--eval-every", "0", "--save-every", "0", "--dropout", "0", "--out", os.path.join(out, "run")]
    env = dict(os.environ, **MPI_ENV, OMP_NUM_THREADS=str(threads))
    if ranks > 1:
        cmd = ["mpirun", "-np", str(ranks), "-x", "OMP_NUM_THREADS"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    shutil.rmtree(out, ignore_errors=True)
    m = re.search(r"; ([0-9.]+) tokens/s;", p.stderr)
    if p.returncode or not m:
        lines = p.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit status {p.returncode}"}
    return {"tokens_per_s": float(m.group(1))}


def torch_row(python, env, ranks, threads, steps):
    """tokens/s of the PyTorch peer, or {"error": ...}."""
    cmd = ([python, os.path.join(HERE, "torch_train_mini.py"), "ape", "train-mini", str(threads), str(steps)]
           if ranks == 1 else
           [python, os.path.join(HERE, "torch_ddp_mini.py"), "ape", "train-mini", str(ranks), str(threads), str(steps)])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        return {"tokens_per_s": json.loads(p.stdout.strip().splitlines()[-1])["tokens_per_s"]}
    except (ValueError, IndexError, KeyError):
        lines = (p.stderr or p.stdout).strip().splitlines()
        return {"error": lines[-1] if lines else f"exit status {p.returncode}"}


def median(runs, key):
    """The median of runs' key (tokens_per_s or seconds; the slower middle one for an even count) and their
    range, or the first error."""
    bad = [r for r in runs if "error" in r]
    if bad:
        return bad[0]
    fastest_first = sorted((r[key] for r in runs), reverse=key == "tokens_per_s")
    return {key: fastest_first[len(runs) // 2], "range": [min(fastest_first), max(fastest_first)]}


def main(build, python, have_torch, torch_env, repeat, steps):
    if not os.path.isdir(DATA):
        print(f"bench/run --mpi: {DATA} is absent (WikiText-2 and the BERT vocabulary); nothing to run")
        return 1
    if not shutil.which("mpirun"):
        print("bench/run --mpi: mpirun is missing (scripts/install-deps installs Open MPI)")
        return 1
    runs = {(e, r, t): [] for e in ("posemb", "pytorch") for r, t in LAYOUTS}
    for _ in range(repeat):  # turns: a slow spell of the host hits every layout alike
        for ranks, threads in LAYOUTS:
            runs["posemb", ranks, threads].append(posemb_row(build, ranks, threads, steps))
            if have_torch:
                runs["pytorch", ranks, threads].append(torch_row(python, torch_env, ranks, threads, steps))
    rows = {}
    for (engine, ranks, threads), rs in runs.items():
        if rs:
            rows[engine, ranks, threads] = median(rs, "tokens_per_s")
            print(json.dumps({"engine": engine, "bench": "mpi-train-mini", "ranks": ranks, "threads": threads,
                              "repeats": repeat, **rows[engine, ranks, threads]}), flush=True)
    study = {k: [] for k in STUDY_LAYOUTS}
    for _ in range(repeat):
        for k in STUDY_LAYOUTS:
            study[k].append(study_row(build, *k))
    for (ranks, threads, jobs), rs in study.items():
        row = study[ranks, threads, jobs] = median(rs, "seconds")
        print(json.dumps({"engine": "posemb", "bench": "mpi-study", "ranks": ranks, "threads": threads, "jobs": jobs,
                          "runs": 24, "repeats": repeat, **row}), flush=True)
    print(f"\nmpi-train-mini: tok/s of the global batch (32 x 128), median of {repeat}")
    print(f"{'layout':<18} {'posemb':>8} {'PyTorch':>8} {'ratio':>6}")
    for ranks, threads in LAYOUTS:
        o, t = rows.get(("posemb", ranks, threads), {}), rows.get(("pytorch", ranks, threads), {})
        ov, tv = o.get("tokens_per_s"), t.get("tokens_per_s")
        ratio = f"{ov / tv:6.2f}" if ov and tv else f"{'-':>6}"
        print(f"{f'{ranks} rank x {threads} thr':<18} {ov or '-':>8} {tv or '-':>8} {ratio}")
    print(f"\nmpi-study: wall seconds of 24 runs of the default study's size, median of {repeat}")
    for (ranks, threads, jobs), row in study.items():
        what = f"{ranks} rank x {threads} thr" + (f", --jobs {jobs}" if jobs > 1 else "")
        print(f"{what:<26} {row.get('seconds', row.get('error')):>8}")
    one, two = study[1, 1, 1].get("seconds"), study[2, 1, 1].get("seconds")
    if one and two:
        print(f"study: 2 ranks / 1 rank at one thread each = {one / two:.2f} (target >= 1.7)")
    for engine in ("posemb", "pytorch"):
        one, two = rows.get((engine, 1, 1), {}).get("tokens_per_s"), rows.get((engine, 2, 1), {}).get("tokens_per_s")
        if one and two:
            print(f"{engine}: 2 ranks / 1 rank at one thread each = {two / one:.2f} (target >= 1.7)")
    return 0
