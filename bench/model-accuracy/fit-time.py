#!/usr/bin/python3
"""Wall time of `memwatch fit` on 4 and 5 parameters where every stage runs: U-net-shaped sweeps
with 3% noise (above the 0.5% that triggers the GP and the regime search), one with a break at
batch 1 at 0.5% noise, and a fifth parameter (workers, 50 MB each). Default options, then
--regimes 2, --log, --log-power 2 and --factors 4. Prints one line per file and options: the best
of --repeat runs.
"""
import argparse
import itertools
import os
import random
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def unet(b, d, f, l):
    return 3e8 + 2e5 * f * f * l + 80 * b * d ** 3 * f + 2000 * d ** 3


def write(path, names, grid, law, noise, rng):
    with open(path, "w") as out:
        out.write(",".join(names) + ",host_peak_bytes\n")
        for x in itertools.product(*grid):
            out.write(",".join(str(v) for v in x) + f",{law(*x) * (1 + noise * rng.gauss(0, 1)):.0f}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--memwatch", default=os.path.join(ROOT, "build", "bin", "memwatch"))
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(1)
    four = [[1, 2, 4, 8, 16], [32, 48, 64, 96, 128, 144], [8, 16, 32], [3, 4, 5]]
    with tempfile.TemporaryDirectory() as tmp:
        files = {
            "4 parameters, 3% noise (270 runs)": (["batch", "dim", "filters", "levels"], four, unet, 0.03),
            "4 parameters, a break at batch 1, 0.5% noise (270 runs)": (
                ["batch", "dim", "filters", "levels"], four,
                lambda b, d, f, l: unet(b, d, f, l) + (27 * 16 * d ** 3 if b == 1 else 0), 0.005),
            "5 parameters, 3% noise (432 runs)": (
                ["batch", "dim", "filters", "levels", "workers"],
                [[1, 2, 4, 8], [32, 64, 96, 128], [8, 16, 32], [3, 4, 5], [1, 2, 4]],
                lambda b, d, f, l, w: unet(b, d, f, l) + 5e7 * w, 0.03),
        }
        for name, (names, grid, law, noise) in files.items():
            path = os.path.join(tmp, "runs.csv")
            write(path, names, grid, law, noise, rng)
            for options in ([], ["--regimes", "2"], ["--log"], ["--log-power", "2"],
                            ["--factors", "4"]):
                best = float("inf")
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    subprocess.run([args.memwatch, "fit", "--input", path, *options], check=True,
                                   capture_output=True)
                    best = min(best, time.perf_counter() - start)
                print(f"{name:58} {' '.join(options) or 'defaults':12} {best:6.2f} s")


if __name__ == "__main__":
    main()
