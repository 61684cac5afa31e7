"""The columns of a sweep's CSV, read from their one definition (the run figures of
protocol/memwatch/protocol/figures.hpp) for the benchmarks and collection scripts in Python."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "protocol", "memwatch", "protocol", "figures.hpp")


def run_figures():
    """The figures a sweep writes per run (run = yes in MEMWATCH_FIGURES), in their order."""
    with open(FIGURES) as f:
        text = f.read()
    columns = []
    for args in re.findall(r"^\s*X\(([^)]*)\)", text, re.M):
        fields = [f.strip() for f in args.split(",")]
        if len(fields) == 10 and fields[7] == "yes":
            columns.append(fields[1])
    if not columns:
        raise SystemExit(f"no run figures found in {FIGURES}")
    return columns


# Every column that is measured, not chosen: the rest of a sweep's columns are its parameters.
MEASUREMENTS = set(run_figures()) | {"elapsed_s", "exit_status"}


def modeled_figure(rows):
    """The peak a sweep is about, as `memwatch fit` picks it: the device's where every run used
    one, else the host's."""
    if rows and all(float(r.get("device_peak_bytes") or 0) > 0 for r in rows):
        return "device_peak_bytes"
    return "host_peak_bytes"
