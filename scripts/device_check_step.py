#!/usr/bin/env python3
"""One PyTorch 3D U-net training run on the GPU, for scripts/device-check.

Runs workloads/unet3d/train.py in this process when the tree has it, else the small reference
network below (same shape: levels of two Conv3d-BatchNorm-ReLU, max-pool down, transposed
convolution up, skip concatenation). Afterwards, from the same process, it writes what PyTorch
and NVML say about device memory as JSON to --out. It knows nothing of memwatch.
"""
import argparse
import json
import os
import runpy
import sys

import torch
from torch import nn


def block(cin, cout):
    return nn.Sequential(
        nn.Conv3d(cin, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU(inplace=True),
        nn.Conv3d(cout, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU(inplace=True))


class UNet3d(nn.Module):
    def __init__(self, channels=4, classes=3, filters=16, levels=5):
        super().__init__()
        widths = [filters * 2 ** i for i in range(levels)]
        self.down = nn.ModuleList()
        cin = channels
        for w in widths:
            self.down.append(block(cin, w))
            cin = w
        self.up = nn.ModuleList()
        self.merge = nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(nn.ConvTranspose3d(cin, w, 2, stride=2))
            self.merge.append(block(2 * w, w))
            cin = w
        self.out = nn.Conv3d(cin, classes, 1)

    def forward(self, x):
        skips = []
        for i, level in enumerate(self.down):
            x = level(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = nn.functional.max_pool3d(x, 2)
        for up, merge in zip(self.up, self.merge):
            x = merge(torch.cat([up(x), skips.pop()], dim=1))
        return torch.sigmoid(self.out(x))


def own_network(dim, batch, steps):
    torch.manual_seed(0)
    net = UNet3d().cuda()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    x = torch.randn(batch, 4, dim, dim, dim, device="cuda")
    y = (torch.rand(batch, 3, dim, dim, dim, device="cuda") > 0.5).float()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.binary_cross_entropy(net(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()


def workload(path, dim, batch, steps):
    argv = [path, "--device", "cuda", "--dim", str(dim), "--batch-size", str(batch),
            "--steps", str(steps)]
    saved = sys.argv
    sys.argv = argv
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
    finally:
        sys.argv = saved
    torch.cuda.synchronize()


def nvml_process_bytes():
    """This process's device memory as NVML sees it (context included), or None."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
        mine = None
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
            if p.pid == os.getpid() and p.usedGpuMemory is not None:
                mine = int(p.usedGpuMemory)
        pynvml.nvmlShutdown()
        return {"process_used_bytes": mine, "total_bytes": int(total)}
    except pynvml.NVMLError as e:
        return {"error": str(e)}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--batch-size", type=int, default=2)
    p.add_argument("--steps", type=int, default=2)
    o = p.parse_args()
    train_py = os.path.join(os.path.dirname(__file__), "..", "workloads", "unet3d", "train.py")
    if os.path.exists(train_py):
        workload(train_py, o.dim, o.batch_size, o.steps)
        network = "workloads/unet3d/train.py"
    else:
        own_network(o.dim, o.batch_size, o.steps)
        network = "scripts/device_check_step.py"
    result = {
        "network": network,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "backend": torch.cuda.get_allocator_backend(),
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "memory_reserved_now": torch.cuda.memory_reserved(),
        "nvml": nvml_process_bytes(),
    }
    with open(o.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
