"""The studies' wall clock as benchmark rows (bench/run --studies; bench/README.md).

Three rows, each the whole `posemb study` command a user runs, timed from
start to end (the build excluded):

  default-study   the embedded default study (16 PEs x 6 tasks x 3 seeds, 2
                  workers): its runs, tables and report
  data-pretrain   one pretraining of the real-data study (BERT 4 x 128, the
                  default's 32 x 128 tokens a step), STEPS steps (--steps,
                  default 300) and its evaluations, then one fine-tuning step
  length-run      one run of the length study (Llama, rope, the default's
                  32 x 128 tokens a step), STEPS steps and its evaluations at
                  1x-16x, passkey included

Each row gives the peak memory of its command (max_rss_kb: the largest
resident set of any one process, the command or a worker it waited for,
over its repeats; not a sum over workers running at once). The two partial rows also give the projected time of their whole unit (3000
and 2000 steps, the defaults), from the seconds a step (the run's own
tokens/s line); the other parts of a unit (tokenizing the corpora, which is
cached, fine-tuning, evaluations) are in the row's seconds, not scaled. The
last two rows need DATA (../shared/data); without it they are skipped with a
message. No PyTorch peer: PyTorch has no study."""
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

PRETRAIN_FULL, LENGTH_FULL = 3000, 2000


def data_config(steps, quick):
    c = {"pes": ["ape"], "tasks": ["RTE"], "seeds": [1], "pretrain_steps": steps, "steps": 1, "jobs": 1,
         "analyze": 0}
    if quick:
        c.update({"layers": 1, "hidden": 32, "heads": 2, "intermediate": 64, "n_train": 64})
    return c


def length_config(steps, quick):
    c = {"pes": ["rope"], "tasks": ["llama"], "seeds": [1], "steps": steps, "jobs": 1}
    if quick:
        c.update({"layers": 1, "hidden": 32, "heads": 2, "intermediate": 64, "lengths": [1, 2],
                  "passkey_train": 0, "passkey_trials": 2, "eval_tokens": 2048})
    return c


QUICK_DEFAULT = {"pes": ["none", "rope"], "tasks": ["order", "retrieve"], "seeds": [1], "steps": 50, "jobs": 2}


def one(cmd, cwd):
    """Wall seconds of cmd, its peak memory (the largest resident set of the
    command and the workers it waited for, from wait4) and the last tokens/s
    it printed, or {"error": ...}."""
    with tempfile.TemporaryFile(mode="w+") as out, tempfile.TemporaryFile(mode="w+") as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        text_out, text_err = out.read(), err.read()
    if proc.returncode != 0:
        msg = (text_err or text_out).strip().splitlines()
        return {"error": msg[-1] if msg else f"exit status {proc.returncode}"}
    rates = re.findall(r"([0-9.]+) tok(?:ens)?/s", text_err + text_out)
    return {"seconds": wall, "max_rss_kb": usage.ru_maxrss, "tokens_per_s": float(rates[-1]) if rates else None}


def row(name, build, data, config, flags, repeat, full_steps, step_tokens):
    posemb = os.path.join(build, "posemb")
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="posemb-bench-study-") as tmp:
            cmd = [posemb, "study"]
            if config is not None:
                with open(os.path.join(tmp, "c.json"), "w") as f:
                    json.dump(config, f)
                cmd.append("c.json")
            cmd += flags + (["--data", data] if data else []) + ["--out", "out"]
            runs.append(one(cmd, tmp))
    r = {"engine": "posemb", "bench": "studies", "row": name, "repeats": repeat}
    bad = [x["error"] for x in runs if "error" in x]
    if bad:
        r["error"] = bad[0]
        return r
    secs = sorted(x["seconds"] for x in runs)
    r["seconds"] = round(statistics.median(secs), 2)
    r["seconds_range"] = [round(secs[0], 2), round(secs[-1], 2)]
    r["max_rss_kb"] = max(x["max_rss_kb"] for x in runs)
    rates = [x["tokens_per_s"] for x in runs if x["tokens_per_s"]]
    if full_steps and rates:
        tok_s = statistics.median(rates)
        r["tokens_per_s"] = round(tok_s)
        r["projected_hours"] = round(full_steps * step_tokens / tok_s / 3600, 3)
        r["projected_steps"] = full_steps
    return r


def main(build, data, repeat, steps, quick):
    steps = steps or (20 if quick else 300)
    data = os.path.abspath(data) if data else data  # the commands run in a temporary folder
    have = data and os.path.isdir(os.path.join(data, "glue"))
    rows = [("default-study", QUICK_DEFAULT if quick else None, [], 0, 0)]
    if have:
        rows.append(("data-pretrain", data_config(steps, quick), [], 0 if quick else PRETRAIN_FULL, 32 * 128))
        rows.append(("length-run", length_config(steps, quick), ["--length"], 0 if quick else LENGTH_FULL, 32 * 128))
    else:
        print(f"studies: data-pretrain and length-run skipped: no GLUE under {data!r} (pass --data DATA)")
    print(f"studies: the whole `posemb study` command, median of {repeat}; partial rows: {steps} steps")
    for name, config, flags, full, step_tokens in rows:
        r = row(name, build, data if name != "default-study" else None, config, flags, repeat, full, step_tokens)
        print(json.dumps(r), flush=True)
    return 0
