#!/usr/bin/python3
"""Writes a synthetic sweep CSV shaped like `memwatch sweep` output, from a memory-shaped ground
truth close to a 3D U-net on CPU, until the real sweep (bench/data/unet3d-cpu.csv) exists.

peak = 300 MB                               (runtime, allocator arenas)
     + 2e5 * filters^2 * levels             (weights, gradients, optimiser state)
     + 80 * batch * dim^3 * filters         (activations kept for the backward pass)
     + 2000 * dim^3                         (per-sample im2col workspace: volume alone)
times (1 + noise * N(0, 1)), noise 0.2% by default.
"""
import argparse
import itertools

import numpy as np


def truth(batch, dim, filters, levels):
    return 3e8 + 2e5 * filters**2 * levels + 80 * batch * dim**3 * filters + 2000 * dim**3


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--noise", type=float, default=0.002, help="relative noise (default 0.002)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="-")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    grid = itertools.product([1, 2, 4, 8, 16], [32, 48, 64, 96, 128, 144], [8, 16, 32], [3, 4, 5])
    lines = ["batch,dim,filters,levels,host_peak_bytes,heap_peak_bytes,device_peak_bytes,"
             "rss_hwm_bytes,elapsed_s,exit_status"]
    for batch, dim, filters, levels in grid:
        peak = truth(batch, dim, filters, levels) * (1 + args.noise * rng.standard_normal())
        heap = 0.97 * peak
        rss = peak + 2e7
        elapsed = 1e-9 * batch * dim**3 * filters
        lines.append(f"{batch},{dim},{filters},{levels},{peak:.0f},{heap:.0f},0,{rss:.0f},"
                     f"{elapsed:.3f},0")
    text = "\n".join(lines) + "\n"
    if args.out == "-":
        print(text, end="")
    else:
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
