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
# Cooperlake on a Zen 5): the lines record it, and WORK/coretype pins it within WORK (slice 25's queue pins
# the same file); a new machine may continue under its own, each PE's or run's lines under one.
# Trials of this script only: CONFIG, a config in place of the embedded default, and PER_PE, the lines of
# a finished PE under it; a trial runs in WORK/trial-STUDY and writes WORK/trial-committed/ and
# WORK/trial.starts.txt, nothing here. PYTHON: a python3.
set -eu
usage() { sed -n '2,19p' "$0" >&2; exit 2; }
[ $# -ge 3 ] || usage
here=$(CDPATH='' cd "$(dirname "$0")" && pwd)
root=$(CDPATH='' cd "$here/../.." && pwd)
mode=run
[ "$1" = lines ] && { mode=lines; shift; }
[ $# -eq 3 ] || usage
work=$1 shared=$(CDPATH='' cd "$2" && pwd) study=$3
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
src=$work/src-60cdb3b posemb=$work/src-60cdb3b/build/posemb
# The plan's runs, or a trial's, which touch nothing here.
config="" per_pe=24 out=$work/redraw-$study dest=$here/$study starts=$here/$study.starts.txt
if [ -n "${CONFIG:-}" ]; then
    config=$(CDPATH='' cd "$(dirname "$CONFIG")" && pwd)/$(basename "$CONFIG")
    per_pe=${PER_PE:?run.sh: a trial (CONFIG) needs PER_PE, the lines of a finished PE}
    out=$work/trial-$study dest=$work/trial-committed/$study starts=$work/trial.starts.txt
    mkdir -p "$work/trial-committed"
elif [ -n "${PER_PE:-}" ]; then
    echo "run.sh: PER_PE is for trials (with CONFIG); the plan's real-data PE has 24 lines" >&2; exit 2
fi

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

# A kill between lines()'s two renames leaves DEST.old alone: it is DEST.
recover() {
    if [ ! -d "$dest" ] && [ -d "$dest.old" ]; then mv "$dest.old" "$dest"; fi
}

# The study, resumed from OUT, or on a new machine from what DEST holds.
run() {
    recover
    if [ ! -d "$out" ]; then
        rm -rf "$out.tmp"
        mkdir -p "$out.tmp"
        [ -d "$dest" ] && cp -r "$dest/." "$out.tmp/"
        mv "$out.tmp" "$out"
    fi
    cpu=$(awk -F': ' '/^cpu family/ { f = $2 } /^model\t/ { m = $2 } END { print "family " f " model " m }' /proc/cpuinfo)
    echo "$(date -u '+%Y-%m-%d %H:%M:%S') UTC, $(uname -n), CPU $cpu, $(nproc --all) cores, threads 1," \
        "$("$posemb" --version)${config:+, trial config $config}" >> "$starts"
    # shellcheck disable=SC2086  # $flag and $config: empty or one word
    "$posemb" study $config $flag --data "$shared/data" --out "$out" --jobs 1 --threads 1
}

# OUT's lines as they stand, read under the program's own lock on the file (it appends whole lines under
# flock), a last line without its newline left out.
read_lines() {
    flock -s "$out/results.jsonl" cp "$out/results.jsonl" "$1.tmp"
    "$PYTHON" -c 'import sys; t = open(sys.argv[1]).read(); open(sys.argv[2], "w").write(t[:t.rfind("\n") + 1])' \
        "$1.tmp" "$1"
    rm -f "$1.tmp"
}

# The length study's lines (a run's lines are appended at once, when it ends).
lines_length() {
    mkdir -p "$1"
    read_lines "$1/results.jsonl"
    for f in attention.jsonl extend.jsonl tables.md tables.csv; do
        [ -f "$out/$f" ] && cp "$out/$f" "$1/$f"
    done
    return 0
}

# The real-data study's finished PEs, and only those, in a snapshot beside the run: their lines, their
# models (linked), pretraining logs and analyses. Its report (the program's own `--report`) analyses the
# models there and copies their logs; what it writes is kept. 1 if no PE has finished.
lines_data() {
    snap=$out-snap
    rm -rf "$snap"
    mkdir -p "$snap/models" "$snap/analysis" "$snap/pretrain"
    read_lines "$snap/all.jsonl"
    "$PYTHON" - "$snap/all.jsonl" "$snap/results.jsonl" "$per_pe" > "$snap/finished.txt" <<'EOF'
import collections, json, sys
rows = [(l, json.loads(l)) for l in open(sys.argv[1]) if l.strip()]
keys = collections.defaultdict(list)
for _, r in rows:
    keys[r["pe"]].append((r["task"], r["seed"], r["eval_len"]))
# finished: every (task, seed, length) once, as many as a PE has
done = [p for p, k in keys.items() if len(k) == len(set(k)) == int(sys.argv[3])]
with open(sys.argv[2], "w") as f:
    f.writelines(l for l, r in rows if r["pe"] in done)
print("\n".join(done))
EOF
    [ -s "$snap/results.jsonl" ] || { echo "run.sh: $out: no PE has finished yet" >&2; return 1; }
    while read -r pe; do
        folder=$(echo "$pe" | tr -c 'a-z0-9\n' '_')
        [ -d "$out/models/$folder" ] && ln -s "$out/models/$folder" "$snap/models/$folder"
        [ -d "$out/analysis/$folder" ] && cp -r "$out/analysis/$folder" "$snap/analysis/"
        [ -f "$out/pretrain/$pe.train_log.jsonl" ] && cp "$out/pretrain/$pe.train_log.jsonl" "$snap/pretrain/"
    done < "$snap/finished.txt"
    # shellcheck disable=SC2086
    "$posemb" study $config --data "$shared/data" --out "$snap" --report >"$snap/report.log" 2>&1 ||
        { echo "run.sh: the report of $snap failed: $snap/report.log" >&2; exit 1; }
    mkdir -p "$1"
    for d in pretrain analysis; do rm -rf "${1:?}/$d"; cp -r "$snap/$d" "$1/$d"; done
    for f in results.jsonl tables.md tables.csv; do cp "$snap/$f" "$1/$f"; done
}

# DEST replaced whole, one lines() at a time: written beside it, then renamed.
lines() {
    exec 7>"$dest.lock"
    flock 7
    recover
    [ -f "$out/results.jsonl" ] || { echo "run.sh: $out: no lines yet" >&2; return 0; }
    new=$dest.new
    rm -rf "$new"
    if [ -d "$dest" ]; then cp -r "$dest" "$new"; else mkdir "$new"; fi
    if ! "lines_$study" "$new"; then rm -rf "$new"; return 0; fi
    rm -rf "$dest.old"
    [ -d "$dest" ] && mv "$dest" "$dest.old"
    mv "$new" "$dest"
    rm -rf "$dest.old"
    echo "run.sh: $dest: $(wc -l < "$dest/results.jsonl") lines" >&2
}

if [ "$mode" = lines ]; then
    [ -x "$posemb" ] || { echo "run.sh: $posemb: not built (run.sh WORK SHARED STUDY builds it)" >&2; exit 1; }
    lines
else
    exec 8>"$out.lock" # one run of this study per WORK, taken before the build it runs
    flock -n 8 || { echo "run.sh: $out: another run.sh runs this study" >&2; exit 1; }
    setup
    run
    lines
fi
