#!/bin/sh
# The redraw's runs (README.md here) on whatever machine a session has: the real-data or the length study by
# program 60cdb3b, one thread, resumed from its folder or, on a new machine, from what is committed here.
#   run.sh WORK SHARED STUDY        STUDY: data or length. Builds 60cdb3b in WORK/src-60cdb3b (a git
#                                   worktree of this repository), appends the start to STUDY.starts.txt here
#                                   (time, machine, cores, threads, kernels, program), runs
#                                   `posemb study [--length] --data SHARED/data --out WORK/redraw-STUDY
#                                   --jobs 1 --threads 1`, then `run.sh lines` when it ends.
#   run.sh lines WORK SHARED STUDY  what WORK/redraw-STUDY has finished, into STUDY/ here (commit it): the
#                                   length study's lines; the real-data study's lines, pretraining logs
#                                   and analyses of each PE whose 24 lines are all in (a PE half done is
#                                   drawn again, pretraining and all, if its machine is lost).
# Run data and length side by side, one core each, the same command after any stop; stop one by its process
# group (kill -- -PGID). OPENBLAS_CORETYPE must be set to the machine's kernels (Haswell on a Zen 2,
# Cooperlake on a Zen 5): the lines record it, and WORK/coretype pins it (slice 25's queue pins the same
# file). CONFIG (environment): a config for a trial of this script only; the redraw's runs use the
# embedded default. PER_PE: the real-data lines of a finished PE (24: five GLUE tasks x 3 seeds and
# SQuAD-locate's 3 seeds x 3 windows). PYTHON: a python3.
set -eu
[ $# -ge 3 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
here=$(CDPATH='' cd "$(dirname "$0")" && pwd)
root=$(CDPATH='' cd "$here/../.." && pwd)
mode=run
[ "$1" = lines ] && { mode=lines; shift; }
[ $# -eq 3 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
work=$1 shared=$2 study=$3
case $study in
data) flag="" ;;
length) flag=--length ;;
*) echo "run.sh: $study: not data or length" >&2; exit 2 ;;
esac
: "${OPENBLAS_CORETYPE:?run.sh: set OPENBLAS_CORETYPE to the kernels of the machine (Haswell on a Zen 2, Cooperlake on a Zen 5)}"
export OPENBLAS_CORETYPE OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
PYTHON=${PYTHON:-/usr/bin/python3}
mkdir -p "$work"
work=$(CDPATH='' cd "$work" && pwd)
src=$work/src-60cdb3b posemb=$work/src-60cdb3b/build/posemb out=$work/redraw-$study
config=""
[ -n "${CONFIG:-}" ] && config=$(CDPATH='' cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")

# The program and the kernels, once per WORK at a time (both studies may start together).
setup() {
    exec 9>"$work/redraw-setup.lock"
    flock 9
    if [ -f "$work/coretype" ] && [ "$(cat "$work/coretype")" != "$OPENBLAS_CORETYPE" ]; then
        echo "run.sh: $work's runs use $(cat "$work/coretype") kernels, not $OPENBLAS_CORETYPE" >&2; exit 1
    fi
    echo "$OPENBLAS_CORETYPE" > "$work/coretype"
    if [ ! -d "$src" ]; then
        git -C "$root" worktree prune
        git -C "$root" worktree add --detach "$src" 60cdb3b
    fi
    make -C "$src" all >"$work/build-60cdb3b.log" 2>&1 || { echo "run.sh: build failed: $work/build-60cdb3b.log" >&2; exit 1; }
    "$posemb" --version | grep -q 'libxsmm 1\.17' ||
        { echo "run.sh: $posemb has no libxsmm 1.17 (the plan's products): install libxsmm-dev" >&2; exit 1; }
    flock -u 9
}

# The study, resumed from WORK/redraw-STUDY, or on a new machine from what STUDY/ here holds.
run() {
    exec 8>"$out.lock"
    flock -n 8 || { echo "run.sh: $out: another run.sh runs this study" >&2; exit 1; }
    if [ ! -d "$out" ]; then
        rm -rf "$out.tmp"
        mkdir -p "$out.tmp"
        [ -d "$here/$study" ] && cp -r "$here/$study/." "$out.tmp/"
        mv "$out.tmp" "$out"
    fi
    cpu=$(awk -F': ' '/^cpu family/ { f = $2 } /^model\t/ { m = $2 } END { print "family " f " model " m }' /proc/cpuinfo)
    echo "$(date -u '+%Y-%m-%d %H:%M:%S') UTC, $(uname -n), CPU $cpu, $(nproc --all) cores, threads 1," \
        "$("$posemb" --version)${config:+, trial config $config}" >> "$here/$study.starts.txt"
    # shellcheck disable=SC2086  # $flag and $config: empty or one word
    "$posemb" study $config $flag --data "$shared/data" --out "$out" --jobs 1 --threads 1
}

# The length study's lines as they stand (a run's lines are appended at once, when it ends).
lines_length() {
    mkdir -p "$1"
    cp "$out/results.jsonl" "$1/results.jsonl"
    for f in attention.jsonl extend.jsonl tables.md tables.csv; do
        [ -f "$out/$f" ] && cp "$out/$f" "$1/$f"
    done
    return 0
}

# The real-data study's finished PEs: their lines into a snapshot beside the run, whose report (the
# program's own `--report`) writes their analyses and copies their pretraining logs; those are kept.
lines_data() {
    snap=$out-snap
    rm -rf "$snap"
    mkdir -p "$snap"
    for d in analysis pretrain; do [ -d "$out/$d" ] && cp -r "$out/$d" "$snap/$d"; done
    ln -s "$out/models" "$snap/models"
    "$PYTHON" - "$out/results.jsonl" "$snap/results.jsonl" "${PER_PE:-24}" > "$snap/finished.txt" <<'EOF'
import collections, json, sys
rows = [l for l in open(sys.argv[1]) if l.strip()]
per = collections.Counter(json.loads(l)["pe"] for l in rows)
done = [p for p, n in per.items() if n >= int(sys.argv[3])]
with open(sys.argv[2], "w") as f:
    f.writelines(l for l in rows if json.loads(l)["pe"] in done)
print("\n".join(done))
EOF
    [ -s "$snap/results.jsonl" ] || { echo "run.sh: $out: no PE finished yet" >&2; return 0; }
    # shellcheck disable=SC2086
    "$posemb" study $config --data "$shared/data" --out "$snap" --report >"$snap/report.log" 2>&1 ||
        { echo "run.sh: the report of $snap failed: $snap/report.log" >&2; exit 1; }
    mkdir -p "$1/pretrain" "$1/analysis"
    cp "$snap/results.jsonl" "$1/results.jsonl"
    while read -r pe; do
        folder=$(echo "$pe" | tr -c 'a-z0-9\n' '_')
        cp "$snap/pretrain/$pe.train_log.jsonl" "$1/pretrain/"
        [ -d "$snap/analysis/$folder" ] && { rm -rf "$1/analysis/$folder"; cp -r "$snap/analysis/$folder" "$1/analysis/"; }
    done < "$snap/finished.txt"
    for f in tables.md tables.csv; do cp "$snap/$f" "$1/$f"; done
}

# STUDY/ here replaced whole: written beside it, then renamed.
lines() {
    [ -f "$out/results.jsonl" ] || { echo "run.sh: $out: no lines yet" >&2; return 0; }
    new=$here/$study.new
    rm -rf "$new"
    if [ -d "$here/$study" ]; then cp -r "$here/$study" "$new"; else mkdir "$new"; fi
    "lines_$study" "$new"
    rm -rf "$here/$study.old"
    [ -d "$here/$study" ] && mv "$here/$study" "$here/$study.old"
    mv "$new" "$here/$study"
    rm -rf "$here/$study.old"
    echo "run.sh: $here/$study: $(wc -l < "$here/$study/results.jsonl") lines" >&2
}

if [ "$mode" = lines ]; then
    [ -x "$posemb" ] || { echo "run.sh: $posemb: not built (run.sh WORK SHARED STUDY builds it)" >&2; exit 1; }
    lines
else
    setup
    run
    lines
fi
