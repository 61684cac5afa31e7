#!/usr/bin/python3
"""`memwatch sweep --auto` on a real trainer, checked against a reference sweep's truth.

For each combination of the fixed parameters in a reference dataset of bench/data (unet3d-cpu.csv:
levels x filters), runs `memwatch sweep --auto` over that dataset's grid of the varying ones
(dim x batch) toward its largest point, running the trainer for real, and compares the
prediction at the target with the peak measured there in the reference data. Prints, per target:
the runs used, the largest run's share of the target's measured peak, the prediction's error,
the bound's headroom over the prediction, the wall time, and what stopped the sweep.

    bench/model-accuracy/auto-sweep.py [--data unet3d-cpu] [--only levels=5,filters=16]

--replay runs build/bin/sweep-helper instead of the trainer, allocating the peak the reference
data holds for each point (to the MiB): the planner's choices in seconds, without the trainer's
CPU time, for tuning; the figures to quote are the real runs'.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# How each reference dataset was swept: the command (as in its collect script) and which of its
# columns the auto sweep varies; the other parameter columns are fixed per target.
DATASETS = {
    "unet3d-cpu": {
        "command": ["build/bin/unet3d-train", "--levels", "{levels}", "--filters", "{filters}",
                    "--dim", "{dim}", "--batch-size", "{batch}", "--steps", "2", "--threads", "2"],
        "vary": ["dim", "batch"],
    },
    "unet3d-py-cpu": {
        "command": ["/usr/bin/python3", "workloads/unet3d/train.py", "--levels", "{levels}",
                    "--filters", "{filters}", "--workers", "{workers}", "--dim", "{dim}",
                    "--batch-size", "{batch}", "--steps", "2", "--threads", "2"],
        "vary": ["dim", "batch"],
    },
    "transformer-cpu": {
        "command": ["/usr/bin/python3", "workloads/transformer/train.py", "--batch-size", "{batch}",
                    "--seq-len", "{seq}", "--d-model", "{d_model}", "--steps", "2", "--threads", "1"],
        "vary": ["seq", "batch", "d_model"],
    },
    # Its device peaks; without a GPU here, only --replay (the helper holds them as host memory).
    "unet3d-py-cuda": {
        "command": ["python3", "workloads/unet3d/train.py", "--device", "cuda", "--levels",
                    "{levels}", "--filters", "{filters}", "--workers", "{workers}", "--dim",
                    "{dim}", "--batch-size", "{batch}", "--steps", "2", "--threads", "2"],
        "vary": ["dim", "batch"],
    },
}
sys.path.insert(0, HERE)
import run  # noqa: E402  (the sweeps' reader)


def number_order(values):
    return sorted(set(values), key=float)


def replay_command(data_path, params, figure, helper, tmp):
    """A command that allocates the reference peak (`figure`) of its point: sweep-helper MIB, the MiB found
    by awk in the reference CSV (awk exits before the helper starts, so its memory is not in the
    job's peak). The point's values come as arguments, in the order of `params`."""
    with open(data_path) as f:
        header = f.readline().strip().split(",")
    column = {name: i + 1 for i, name in enumerate(header)}
    match = "&&".join(f"${column[p]}==v{i}" for i, p in enumerate(params))
    values = " ".join(f'-v v{i}="${i + 1}"' for i in range(len(params)))
    script = os.path.join(tmp, "replay.sh")
    with open(script, "w") as f:
        f.write("#!/bin/sh\n"
                f"mib=$(awk -F, {values} '{match}&&${column['exit_status']}==0"
                f"{{print int(${column[figure]}/1048576+0.5); exit}}' {data_path})\n"
                '[ -n "$mib" ] || exit 2\n'
                f'exec {helper} "$mib"\n')
    os.chmod(script, 0o755)
    return [script, *(f"{{{p}}}" for p in params)]


def auto_sweep(memwatch, spec, fixed, grid, target, budget, tolerance, tmp, axes=None):
    out, model = os.path.join(tmp, "auto.csv"), os.path.join(tmp, "model.json")
    argv = [memwatch, "sweep", "--auto", "--out", out, "--model-out", model,
            "--budget-runs", str(budget), "--tolerance", tolerance,
            "--toward", ",".join(f"{k}={v}" for k, v in target.items())]
    if axes:
        argv += ["--axes", axes]
    for name, value in fixed.items():
        argv += ["--grid", f"{name}={value}"]
    for name, values in grid.items():
        argv += ["--grid", f"{name}=" + ",".join(values)]
    argv += ["--", *spec["command"]]
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0 or not os.path.exists(model):
        sys.stderr.write(done.stderr)
        return None
    with open(out) as f:
        runs = [r for r in csv.DictReader(f)]
    predicted = subprocess.run([memwatch, "predict", "--model", model, "--json",
                                *(f"{k}={v}" for k, v in target.items())],
                               capture_output=True, text=True, check=True)
    at = json.loads(predicted.stdout)
    return {"runs": runs, "prediction": at["prediction"], "upper": at["upper"],
            "seconds": seconds, "line": done.stdout.strip()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="unet3d-cpu", choices=sorted(DATASETS))
    ap.add_argument("--memwatch", default=os.path.join(ROOT, "build/bin/memwatch"))
    ap.add_argument("--only", default="", help="fixed parameters of one target: levels=5,filters=16")
    ap.add_argument("--budget-runs", type=int, default=10)
    ap.add_argument("--tolerance", default="2%")
    ap.add_argument("--axes", help="the tensor axes the parameters span (sweep --auto --axes dim=3)")
    ap.add_argument("--replay", action="store_true",
                    help="allocate the reference peaks with sweep-helper instead of training")
    ap.add_argument("--helper", default=os.path.join(ROOT, "build/bin/sweep-helper"))
    args = ap.parse_args()

    spec = dict(DATASETS[args.data])
    data_path = os.path.join(ROOT, "bench", "data", args.data + ".csv")
    _, params, rows, figure = run.read_runs(data_path)  # figure: the truth's column
    measured = figure  # the runs' column: what the sweep models
    replay_dir = tempfile.TemporaryDirectory(prefix="memwatch-replay-")
    if args.replay:
        spec["command"] = replay_command(data_path, params, figure, args.helper, replay_dir.name)
        measured = "host_peak_bytes"
    fixed_names = [p for p in params if p not in spec["vary"]]
    only = dict(item.split("=") for item in args.only.split(",") if item)
    combos = sorted({tuple(r[p] for p in fixed_names) for r in rows},
                    key=lambda c: [-float(v) for v in c])
    print(f"memwatch sweep --auto on {args.data}{' (replayed)' if args.replay else ''} toward each "
          "group's largest point "
          f"(budget {args.budget_runs} runs, tolerance {args.tolerance}"
          f"{', --axes ' + args.axes if args.axes else ''})")
    print(f"{'target':<44} {'truth':>9} {'predicted':>9} {'error':>7} {'bound':>6} "
          f"{'runs':>4} {'largest':>7} {'time':>6}  stopped")
    errors, shares, used = [], [], []
    for combo in combos:
        fixed = dict(zip(fixed_names, combo))
        if any(fixed.get(k) != v for k, v in only.items()):
            continue
        group = [r for r in rows if all(r[k] == v for k, v in fixed.items())]
        grid = {v: number_order(r[v] for r in group) for v in spec["vary"]}
        # The target: the group's largest measured point.
        largest = max(group, key=lambda r: int(r[figure]))
        target = {v: largest[v] for v in spec["vary"]}
        truth = float(largest[figure])
        with tempfile.TemporaryDirectory(prefix="memwatch-auto-") as tmp:
            got = auto_sweep(args.memwatch, spec, fixed, grid, target, args.budget_runs,
                             args.tolerance, tmp, args.axes)
        name = " ".join(f"{k}={v}" for k, v in {**fixed, **target}.items())
        if got is None:
            print(f"{name:<44} {truth / 2**30:>8.2f}G  no model")
            continue
        ok = [r for r in got["runs"] if r["exit_status"] == "0"]
        share = max(float(r[measured]) for r in ok) / truth
        error = got["prediction"] / truth - 1
        errors.append(abs(error))
        shares.append(share)
        used.append(len(got["runs"]))
        stopped = got["line"].split("stopped: ")[-1]
        print(f"{name:<44} {truth / 2**30:>8.2f}G {got['prediction'] / 2**30:>8.2f}G "
              f"{error * 100:>+6.2f}% {(got['upper'] / got['prediction'] - 1) * 100:>+5.1f}% "
              f"{len(got['runs']):>4} {share * 100:>6.1f}% {got['seconds']:>5.0f}s  {stopped}")
    if errors:
        print(f"largest |error| {max(errors) * 100:.2f}%, runs {min(used)}-{max(used)}, "
              f"largest run {max(shares) * 100:.1f}% of its target's peak "
              f"(goal: <= 2%, <= 10 runs, <= 12.5%)")


if __name__ == "__main__":
    main()
