#!/usr/bin/env python3
"""Slice 22's verdicts (../README.md, "Slice 22"), from slice11/readout.sh's
read-out of its six runs into one folder, each run a "model" named ARM-sSEED
(ARM: frozen-sin, frozen-sin-shuffled, frozen-smooth; SEED: 1, 2), beside
slice 19's read-out (its sinusoid arm, sinusoid-s1, reported next to
frozen-sin):

    python3 results/position-learning/slice22/judge.py DIR SLICE19_DIR

As slice 20's judge: every run's PE must be its arm's (frozen=on, the fixed
factor 0.713, no learned scale; a run whose PE differs stops the judge); the
final models' word-order costs (order_ablation.py's) decide, over both seeds.
C22 is judged when frozen-sin's two runs are read out, H22.1 and H22.2 only
when C22 held and their arm's two runs are read out."""
import importlib.machinery
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _slice20():
    """Slice 20's judge as a module (its reader, PE check and rule), under its own name."""
    path = os.path.join(HERE, "..", "slice20", "judge.py")
    loader = importlib.machinery.SourceFileLoader("judge20", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("judge20", loader))
    loader.exec_module(module)
    return module


J = _slice20()
ARMS = ("frozen-sin", "frozen-sin-shuffled", "frozen-smooth")
READ = 0.05  # nats: the step at which a run is first read, as the other slices report it


def onset(steps):
    """The first kept step whose cost passes READ, or None."""
    return next((st for st, c in steps if c > READ), None)


def main(folder, slice19):
    folder, slice19 = os.path.abspath(folder), os.path.abspath(slice19)
    cost = {f"{a}-s{s}": J.read(folder, f"{a}-s{s}") for a in ARMS for s in J.SEEDS}
    for name, c in cost.items():
        if c is not None:
            J.check_pe(folder, name)
    reads = lambda got: all(c > J.MARGIN for c in got.values())  # noqa: E731
    control = [cost[f"frozen-sin-s{s}"] for s in J.SEEDS]
    if None in control:
        print("C22: frozen-sin not read out in both seeds, not judged; H22.1-H22.2 not judged")
    else:
        J.rule("C22 (frozen-sin reads order in both seeds)", reads, ("frozen-sin",), cost)
        if reads({n: cost[n] for n in ("frozen-sin-s1", "frozen-sin-s2")}):
            J.rule("H22.1 (frozen-sin-shuffled unread in both seeds)", lambda g: all(c < J.MARGIN for c in g.values()),
                   ("frozen-sin-shuffled",), cost)
            J.rule("H22.2 (frozen-smooth reads order in both seeds)", reads, ("frozen-smooth",), cost)
        else:
            print("H22.1-H22.2: not judged (C22 did not hold)")
    sin = J.read(slice19, "sinusoid-s1")
    for name, c in cost.items():
        if c is None:
            continue
        steps = J.by_step(os.path.join(folder, name))
        first = onset(steps)
        print(f"reported {name}: final cost {c:+.4f} ({'reads' if c > J.MARGIN else 'does not read'} order by "
              f"{J.MARGIN}); minus slice 19's sinusoid arm {'-' if sin is None else format(c - sin, '+.4f')}; first "
              f"past {READ} at step {first if first is not None else '- (never)'}; cost by step "
              + ", ".join(f"{st} {v:+.3f}" for st, v in steps))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
