#!/bin/sh
# Slice 25's queue on whatever machine a session has (../README.md, "Slice 25: the machine replaced"):
# the program and the corpus made or checked, then one lane of configs, each study resumed from its
# folder's checkpoints and lines or drawn, its pretraining read out, then its lines copied here.
#   queue.sh WORK SHARED LANE      LANE: a (rpe-24k-s1, ape-hf-24k-s2, rpe-24k-s3)
#                                        b (ape-hf-24k-s1, rpe-24k-s2, ape-hf-24k-s3)
# Run lanes a and b side by side, one core each, with OPENBLAS_CORETYPE set (run.sh); again after any
# stop (a config whose 24 lines are here is done). Stop a lane by its process group (kill -- -PGID):
# killing queue.sh alone leaves its study running. WORK: the runs' folder, no spaces (WORK/src-686c6b3:
# program 686c6b3 as a git worktree of this repository, built here; WORK/data: SHARED/data with extra/,
# by scripts/corpus-extra, its texts checked against ../SOURCES-extra.md at every start; WORK/NAME/study:
# a config's run; WORK/coretype: the kernels WORK's runs use, a restart with others is refused).
# SHARED: the project's ../shared (its data/). Committing the lines is the session's job.
set -eu
[ $# -eq 3 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
work=$1 shared=$2 lane=$3
here=$(CDPATH= cd "$(dirname "$0")" && pwd)
root=$(CDPATH= cd "$here/../../.." && pwd)
case $lane in
a) names="rpe-24k-s1 ape-hf-24k-s2 rpe-24k-s3" ;;
b) names="ape-hf-24k-s1 rpe-24k-s2 ape-hf-24k-s3" ;;
*) echo "queue.sh: lane $lane: not a or b" >&2; exit 2 ;;
esac
: "${OPENBLAS_CORETYPE:?queue.sh: set OPENBLAS_CORETYPE to the machine's kernels (Haswell on a Zen 2, Cooperlake on a Zen 5)}"
mkdir -p "$work"
work=$(CDPATH= cd "$work" && pwd)
case $work in *" "*) echo "queue.sh: $work: no spaces (readout.sh lists folders by words)" >&2; exit 2 ;; esac
export PYTHON="${PYTHON:-/usr/bin/python3}" POSEMB_PYTHON="$work/src-686c6b3/python"
locks=""
trap 'for l in $locks; do rm -rf "$l"; done' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# lock DIR: held by this process; one whose process is gone is taken over, a live one waited for
lock() {
    until mkdir "$1" 2>/dev/null; do
        pid=$(cat "$1/pid" 2>/dev/null || true)
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then rm -rf "$1"; continue; fi
        echo "queue.sh: waiting for $1 (process ${pid:-starting})" >&2
        sleep 30
    done
    echo $$ > "$1/pid"
    locks="$locks $1"
}
unlock() { rm -rf "$1"; locks=$(echo "$locks" | sed "s# $1##"); }

lock "$work/setup.lock"
if [ -f "$work/coretype" ] && [ "$(cat "$work/coretype")" != "$OPENBLAS_CORETYPE" ]; then
    echo "queue.sh: $work's runs use $(cat "$work/coretype") kernels, not $OPENBLAS_CORETYPE" >&2; exit 1
fi
echo "$OPENBLAS_CORETYPE" > "$work/coretype"
src=$work/src-686c6b3
if [ ! -d "$src" ]; then
    git -C "$root" worktree prune
    git -C "$root" worktree add --detach "$src" 686c6b3
fi
make -C "$src" all >"$work/build-686c6b3.log" 2>&1 || { echo "queue.sh: build failed: $work/build-686c6b3.log" >&2; exit 1; }
"$src/build/posemb" --version | grep -q 'libxsmm 1\.17' ||
    { echo "queue.sh: $src/build/posemb has no libxsmm 1.17 (the slice's products): install libxsmm-dev" >&2; exit 1; }
if [ ! -d "$work/data/extra" ]; then
    rm -rf "$work/data.tmp"
    cp -r "$shared/data" "$work/data.tmp"
    chmod -R u+w "$work/data.tmp"
    "$PYTHON" "$root/scripts/corpus-extra" "$work/data.tmp" >"$work/corpus-extra.log" 2>&1 ||
        { echo "queue.sh: scripts/corpus-extra failed: $work/corpus-extra.log" >&2; exit 1; }
    mv "$work/data.tmp" "$work/data"
fi
# each text's sha256 on disk against the table's (file in column 1, text sha256 in column 6)
awk -F'|' '/^\| [a-z]+\.txt / { gsub(/[ `]/, "", $2); gsub(/[ `]/, "", $7); print $7 "  " $2 }' \
    "$here/../SOURCES-extra.md" > "$work/extra.sha256"
[ "$(wc -l < "$work/extra.sha256")" -eq 6 ] || { echo "queue.sh: ../SOURCES-extra.md: not 6 texts" >&2; exit 1; }
(cd "$work/data/extra" && sha256sum -c --quiet "$work/extra.sha256") ||
    { echo "queue.sh: $work/data/extra: a text differs from ../SOURCES-extra.md's" >&2; exit 1; }
unlock "$work/setup.lock"

for name in $names; do
    lines=0
    [ -f "$here/$name.results.jsonl" ] && lines=$(wc -l < "$here/$name.results.jsonl")
    [ "$lines" -ge 24 ] && continue
    mkdir -p "$work/$name"
    lock "$work/$name/lock"
    out=$work/$name/study
    echo "queue.sh: $name: study ($lines of 24 lines here), $(date -u +%H:%M:%S) UTC" >&2
    sh "$here/run.sh" study "$src/build/posemb" "$work/data" "$out" "$name"
    echo "queue.sh: $name: read-out, $(date -u +%H:%M:%S) UTC" >&2
    sh "$here/run.sh" readout "$src/build/posemb" "$out" "$name"
    sh "$here/run.sh" lines "$out" "$name"
    unlock "$work/$name/lock"
done
echo "queue.sh: lane $lane done, $(date -u +%H:%M:%S) UTC" >&2
