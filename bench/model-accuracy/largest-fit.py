#!/usr/bin/python3
"""The largest batch that fits, at volumes never run: memwatch's answer (`memwatch max`, by the
upper bound) against the truth and against AutoBatch's way, a line in the batch through probes
run at the target size itself.

For each sweep in bench/data, memwatch fits the runs at the smaller volumes (the extrapolation
split of run.py: volume <= largest / 1.5). At the largest volume each configuration is given three
capacities, 30%, 55% and 80% of the way from its measured peak at batch 4 to that at batch 8
(batch 5.2, 6.2 and 7.2 on that line: a fifth of a step to spare each; at 50% the capacity was
batch 6's peak to the byte, where even an exact prediction answers 5); the truth is the largest
batch whose peak fits, read off the line through those two measured peaks (memory is affine in
the batch from batch 2 on: the measured slopes agree to 0.1%). Three answers per configuration:

  memwatch           from the small volumes alone (no run at the target);
  AutoBatch's line   through the target's own peaks at batch 2 and 4 (two probe runs there);
  memwatch + probes  the small volumes and the same two probes (the probes correct the formula
                     at that configuration: docs/modeler.md, *A configuration's other batch sizes*).

An answer above the truth is an OOM; one below leaves memory unused. Prints one table per sweep.
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402  (the sweeps' reader and writer)

ROOT = run.ROOT


def fit(binary, header, rows, target, path, extra=()):
    csv_path = path + ".csv"
    run.write_csv(csv_path, header, rows)
    fitted = subprocess.run([binary, "fit", "--input", csv_path, "--target", target, "--json", *extra],
                            capture_output=True, text=True, check=True)
    with open(path, "w") as f:
        f.write(fitted.stdout)
    return path


def largest(binary, model, capacity, at):
    answer = subprocess.run([binary, "max", "--model", model, "--vary", "batch", "--capacity",
                             str(capacity), *[f"{k}={v}" for k, v in at.items()], "--json"],
                            capture_output=True, text=True)
    if answer.returncode != 0:
        return 0  # nothing fits
    return int(json.loads(answer.stdout)["value"])


def line_answer(b1, p1, b2, p2, capacity):
    slope = (p2 - p1) / (b2 - b1)
    return int(np.floor(b1 + (capacity - p1) / slope))


def verdict(answer, truth):
    if answer == truth:
        return "exact"
    return f"{answer - truth:+d}" + (" (OOM)" if answer > truth else "")


def one_sweep(binary, path, target, volume, tmp, extra=(), asked_at=None):
    header, params, rows, target = run.read_runs(path, target)
    if "batch" not in params:
        return
    largest_volume = asked_at or max(float(r[volume]) for r in rows)
    at_largest = [r for r in rows if float(r[volume]) == largest_volume]
    if not at_largest:
        sys.exit(f"largest-fit.py: --at {largest_volume:g}: no runs at {volume} = {largest_volume:g} "
                 f"in {os.path.relpath(path, ROOT)}")
    if not {2, 4, 8} <= {int(float(r["batch"])) for r in at_largest}:
        print(f"data: {os.path.relpath(path, ROOT)}: no runs at batch 2, 4 and 8 at {volume} = "
              f"{largest_volume:g}: no capacity to ask at")
        return
    others = [p for p in params if p not in ("batch",)]
    small = [r for r in rows if float(r[volume]) <= largest_volume / 1.5]
    at_target = {}
    for r in rows:
        if float(r[volume]) == largest_volume:
            key = tuple(r[p] for p in others)
            at_target.setdefault(key, {})[int(float(r["batch"]))] = float(r[target])
    base_model = fit(binary, header, small, target, os.path.join(tmp, "small.json"), extra)
    print(f"data: {os.path.relpath(path, ROOT)}: fitted on {len(small)} runs at {volume} <= "
          f"{largest_volume / 1.5:g}; asked at {volume} = {largest_volume:g}")
    print()
    print("| configuration | capacity MiB | truth | memwatch | AutoBatch's line (2 probes) "
          "| memwatch + the 2 probes |")
    print("| --- | --- | --- | --- | --- | --- |")
    tally = {"memwatch": [], "line": [], "probed": []}
    for key, peaks in sorted(at_target.items()):
        if not all(b in peaks for b in (2, 4, 8)):
            continue
        at = dict(zip(others, key))
        probes = [r for r in rows if float(r[volume]) == largest_volume
                  and tuple(r[p] for p in others) == key and int(float(r["batch"])) in (2, 4)]
        probed_model = fit(binary, header, small + probes, target, os.path.join(tmp, "probed.json"),
                            extra)
        for share in (0.3, 0.55, 0.8):
            capacity = int(peaks[4] + share * (peaks[8] - peaks[4]))  # as memwatch max is given it
            truth = line_answer(4, peaks[4], 8, peaks[8], capacity)
            mine = largest(binary, base_model, capacity, at)
            line = line_answer(2, peaks[2], 4, peaks[4], capacity)
            probed = largest(binary, probed_model, capacity, at)
            for name, answer in (("memwatch", mine), ("line", line), ("probed", probed)):
                tally[name].append(answer - truth)
            where = ", ".join(f"{k}={v}" for k, v in at.items())
            print(f"| {where} | {capacity / 2**20:.0f} | {truth} | {mine} {verdict(mine, truth)} "
                  f"| {line} {verdict(line, truth)} | {probed} {verdict(probed, truth)} |")
    print()
    for name, label in (("memwatch", "memwatch"), ("line", "AutoBatch's line"),
                        ("probed", "memwatch + probes")):
        d = np.array(tally[name])
        if d.size:
            print(f"{label}: exact {np.sum(d == 0)}, one below {np.sum(d == -1)}, further below "
                  f"{np.sum(d < -1)}, above (OOM) {np.sum(d > 0)} of {d.size}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memwatch", default=os.path.join(ROOT, "build", "bin", "memwatch"))
    ap.add_argument("--data", action="append", help="sweep CSV (default: every one in bench/data)")
    ap.add_argument("--target", help="the figure to model (default: as run.py)")
    ap.add_argument("--volume", help="the column the runs are extrapolated along (default: the "
                    "sweep's, as run.py)")
    ap.add_argument("--at", type=float, help="ask at this volume instead of the largest, fitted on "
                    "the runs at volume <= AT / 1.5")
    ap.add_argument("--axes", help="the tensor axes the parameters span (memwatch fit --axes dim=3)")
    args = ap.parse_args()
    datasets = args.data or sorted(glob.glob(os.path.join(ROOT, "bench", "data", "*.csv")))
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(datasets):
            if i:
                print()
            one_sweep(args.memwatch, path, args.target, run.volume_column(path, args.volume), tmp,
                      ("--axes", args.axes) if args.axes else (), args.at)


if __name__ == "__main__":
    main()
