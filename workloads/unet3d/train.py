#!/usr/bin/env python3
"""unet3d-train in PyTorch: the same network, flags and JSON summary as the C++ trainer.

For Python users and for GPU machines (--device cuda). It knows nothing of memwatch.
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from trainer_flags import Parser, UsageError, int_at_least  # noqa: E402


def positive_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got '{text}'")
    return value


def shape3(text):
    parts = text.split(",")
    if len(parts) != 3:
        raise argparse.ArgumentTypeError("expected D,H,W (three values)")
    return [int_at_least(1)(p) for p in parts]


def config_flags(argv, parser):
    """The options of the YAML file named by --config as flags, to stand before the command
    line's own (which win): `batch_size: 4` is `--batch-size 4`, `shape: [32, 64, 64]` is
    `--shape 32,64,64`."""
    path = None
    for i, word in enumerate(argv):
        if word == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
        elif word.startswith("--config="):
            path = word.split("=", 1)[1]
    if path is None:
        return []
    import yaml
    try:
        with open(path) as f:
            options = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"--config {path}: {e}")
    if not isinstance(options, dict):
        raise UsageError(f"--config {path}: expected a mapping of option: value")
    flags = {a.dest: a.option_strings[0] for a in parser._actions
             if a.option_strings and a.dest not in ("help", "config")}
    tokens = []
    for key, value in options.items():
        if key not in flags:
            raise UsageError(f"--config {path}: unknown option '{key}' "
                             f"(expected one of {', '.join(sorted(flags))})")
        text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
        tokens += [flags[key], text]
    return tokens


def parse_options(argv):
    p = Parser(prog="train.py", allow_abbrev=False,
               description="Trains the reference 3D U-net; the last stdout line is a JSON summary.")
    p.add_argument("--batch-size", type=int_at_least(1), default=1)
    p.add_argument("--dim", type=int_at_least(1))
    p.add_argument("--shape", type=shape3)
    p.add_argument("--channels", type=int_at_least(1), default=4)
    p.add_argument("--classes", type=int_at_least(1), default=3)
    p.add_argument("--filters", type=int_at_least(1), default=16)
    p.add_argument("--levels", type=int_at_least(1), default=5)
    p.add_argument("--steps", type=int_at_least(0), default=10)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--threads", type=int_at_least(0), default=0)
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.add_argument("--lr", type=positive_float, default=1e-3)
    p.add_argument("--data")
    p.add_argument("--workers", type=int_at_least(0), default=0)
    p.add_argument("--config")
    o = p.parse_args(config_flags(argv, p) + argv)
    if o.dim is not None and o.shape is not None:
        raise UsageError("give --dim or --shape, not both")
    if o.levels > 12:
        raise UsageError(f"--levels must be at most 12, got {o.levels}")
    o.shape = o.shape or [o.dim or 64] * 3
    stride = 2 ** (o.levels - 1)
    for edge in o.shape:
        if edge % stride:
            raise UsageError(f"the volume edge {edge} is not divisible by {stride} = "
                             f"2^(levels-1) with --levels {o.levels}")
    # Batch normalisation in training needs more than one value per channel, and the lowest
    # level holds batch x (shape / 2^(levels-1)) of them.
    if o.batch_size * math.prod(edge // stride for edge in o.shape) < 2:
        raise UsageError(f"batch {o.batch_size} leaves one voxel per channel at the lowest level, "
                         "too few for batch normalisation: raise --batch-size or the volume, "
                         "or lower --levels")
    if o.device == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: this PyTorch has no CUDA (built without it, "
                         "or no GPU is visible)")
    return o


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv3d(cin, cout, 3, padding=1)
        self.norm1 = nn.BatchNorm3d(cout)
        self.conv2 = nn.Conv3d(cout, cout, 3, padding=1)
        self.norm2 = nn.BatchNorm3d(cout)

    def forward(self, x):
        x = F.relu(self.norm1(self.conv1(x)))
        return F.relu(self.norm2(self.conv2(x)))


class UNet3d(nn.Module):
    def __init__(self, channels, classes, filters, levels):
        super().__init__()
        width = [filters << i for i in range(levels)]
        self.encoder = nn.ModuleList(
            DoubleConv(channels if i == 0 else width[i - 1], width[i]) for i in range(levels))
        # Decoder level i takes the level below (i+1) up to level i's resolution and filters.
        self.up = nn.ModuleList(
            nn.ConvTranspose3d(width[i + 1], width[i], 2, stride=2) for i in range(levels - 1))
        self.decoder = nn.ModuleList(DoubleConv(2 * width[i], width[i]) for i in range(levels - 1))
        self.head = nn.Conv3d(width[0], classes, 1)

    def forward(self, x):
        skips = []
        x = self.encoder[0](x)
        for block in self.encoder[1:]:
            skips.append(x)
            x = block(F.max_pool3d(x, 2))
        for i in reversed(range(len(self.decoder))):
            x = self.up[i](x)
            x = self.decoder[i](torch.cat([skips[i], x], 1))
        return torch.sigmoid(self.head(x))


def smooth_field(batch, channels, shape):
    coarse = torch.randn(batch, channels, *[max(2, s // 8) for s in shape])
    return F.interpolate(coarse, size=shape, mode="trilinear", align_corners=False)


def synthetic_batch(o):
    """One tumour per sample, nested irregular blobs per class, modalities with contrast in them."""
    d, h, w = o.shape
    b = o.batch_size
    axis = lambda n: (torch.arange(n, dtype=torch.float32) + 0.5) / n
    z, y, x = axis(d).view(1, d, 1, 1), axis(h).view(1, 1, h, 1), axis(w).view(1, 1, 1, w)
    centre = torch.rand(3, b, 1, 1, 1) * 0.5 + 0.25
    radius = torch.rand(3, b, 1, 1, 1) * 0.15 + 0.1
    dist = (((z - centre[0]) / radius[0]) ** 2 + ((y - centre[1]) / radius[1]) ** 2
            + ((x - centre[2]) / radius[2]) ** 2)
    blob = dist.sqrt() + 0.3 * smooth_field(b, 1, o.shape).squeeze(1)
    label = torch.stack([(blob < 1.0 - 0.6 * c / o.classes).float() for c in range(o.classes)], 1)
    contrast = torch.rand(o.channels, o.classes) * 1.5 + 0.5
    image = smooth_field(b, o.channels, o.shape) + torch.einsum("bkdhw,ck->bcdhw", label, contrast)
    return image, label


NIFTI_TYPES = {2: np.uint8, 4: np.int16, 8: np.int32, 16: np.float32, 64: np.float64,
               256: np.int8, 512: np.uint16, 768: np.uint32}


def read_nifti(path):
    """A single-file NIfTI-1 volume as C x D x H x W float32 (D, H, W are NIfTI's z, y, x)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    endian = "<" if struct.unpack("<i", raw[:4])[0] == 348 else ">"
    dims = struct.unpack(endian + "8h", raw[40:56])
    datatype = struct.unpack(endian + "h", raw[70:72])[0]
    vox_offset = int(struct.unpack(endian + "f", raw[108:112])[0])
    slope, inter = struct.unpack(endian + "2f", raw[112:120])
    if datatype not in NIFTI_TYPES:
        raise ValueError(f"{path}: unsupported voxel type {datatype}")
    if dims[0] > 4:
        raise ValueError(f"{path}: more than four dimensions")
    nx, ny, nz = (max(1, dims[i]) if dims[0] >= i else 1 for i in (1, 2, 3))
    nt = max(1, dims[4]) if dims[0] >= 4 else 1
    dtype = np.dtype(NIFTI_TYPES[datatype]).newbyteorder(endian)
    values = np.frombuffer(raw, dtype=dtype, count=nx * ny * nz * nt, offset=vox_offset)
    values = values.astype(np.float32).reshape(nt, nz, ny, nx)
    if slope != 0 and (slope != 1 or inter != 0):
        values = values * slope + inter
    return values


def fit_to(volume, shape):
    """Centre crop where the volume is larger, zero padding where it is smaller."""
    out = np.zeros((volume.shape[0], *shape), dtype=np.float32)
    src, dst = [], []
    for s, d in zip(volume.shape[1:], shape):
        n = min(s, d)
        a, b = max(0, (s - d) // 2), max(0, (d - s) // 2)
        src.append(slice(a, a + n))
        dst.append(slice(b, b + n))
    out[(slice(None), *dst)] = volume[(slice(None), *src)]
    return out


class NiftiVolumes:
    """DIR/imagesTr/NAME.nii[.gz] with DIR/labelsTr/NAME.nii[.gz], as the C++ trainer reads."""

    def __init__(self, root):
        images, labels = os.path.join(root, "imagesTr"), os.path.join(root, "labelsTr")
        if not (os.path.isdir(images) and os.path.isdir(labels)):
            raise ValueError(f"{root}: expected the folders imagesTr/ and labelsTr/")
        names = sorted(n for n in os.listdir(images)
                       if n.endswith((".nii", ".nii.gz")) and not n.startswith("."))
        if not names:
            raise ValueError(f"{images}: no .nii or .nii.gz files")
        self.cases = []
        for n in names:
            label = os.path.join(labels, n)
            if not os.path.isfile(label):
                raise ValueError(f"no label for {os.path.join(images, n)} (expected {label})")
            self.cases.append((os.path.join(images, n), label))

    def load(self, index, o):
        image_path, label_path = self.cases[index % len(self.cases)]
        image, raw = read_nifti(image_path), read_nifti(label_path)
        if image.shape[0] != o.channels:
            raise ValueError(f"{image_path} has {image.shape[0]} modalities, "
                             f"--channels is {o.channels}")
        if raw.shape[1:] != image.shape[1:]:
            raise ValueError(f"{label_path}: its shape differs from the image's")
        if raw.shape[0] == o.classes and o.classes > 1:
            label = (raw > 0.5).astype(np.float32)
        elif raw.shape[0] == 1:
            k = np.rint(raw[0])
            label = np.stack([(k == c + 1).astype(np.float32) for c in range(o.classes)])
        else:
            raise ValueError(f"{label_path} has {raw.shape[0]} volumes; "
                             f"expected 1 (label values) or --classes")
        image, label = fit_to(image, o.shape), fit_to(label, o.shape)
        mean = image.mean(axis=(1, 2, 3), keepdims=True)
        sd = image.std(axis=(1, 2, 3), keepdims=True)
        image = (image - mean) / np.where(sd > 0, sd, 1)
        return torch.from_numpy(image.astype(np.float32)), torch.from_numpy(label)


def nifti_batch(o, volumes, step):
    pairs = [volumes.load(step * o.batch_size + b, o) for b in range(o.batch_size)]
    return torch.stack([p[0] for p in pairs]), torch.stack([p[1] for p in pairs])


class Batches(torch.utils.data.Dataset):
    """A step's batch per index, made in a DataLoader worker process (--workers N), each seeded
    by its step so that the batches do not depend on the number of workers."""

    def __init__(self, o, volumes):
        self.o, self.volumes = o, volumes

    def __len__(self):
        return self.o.steps

    def __getitem__(self, step):
        torch.manual_seed(self.o.seed * 1_000_003 + step)
        return nifti_batch(self.o, self.volumes, step) if self.volumes else synthetic_batch(self.o)


def batches(o, volumes):
    if o.workers == 0:
        for step in range(o.steps):
            yield nifti_batch(o, volumes, step) if volumes else synthetic_batch(o)
        return
    yield from torch.utils.data.DataLoader(Batches(o, volumes), batch_size=None,
                                           num_workers=o.workers)


def dice_bce_loss(prob, target):
    dims = (0, 2, 3, 4)
    inter = (prob * target).sum(dims)
    total = prob.sum(dims) + target.sum(dims)
    dice = 1.0 - ((2.0 * inter + 1.0) / (total + 1.0)).mean()
    return dice + F.binary_cross_entropy(prob, target)


def json_number(v):
    return v if v is not None and math.isfinite(v) else None


def train(o):
    start = time.monotonic()
    if o.threads > 0:
        torch.set_num_threads(o.threads)
    torch.manual_seed(o.seed)
    device = torch.device(o.device)
    volumes = NiftiVolumes(o.data) if o.data else None
    model = UNet3d(o.channels, o.classes, o.filters, o.levels).to(device)
    model.train()
    optimizer = torch.optim.Adam(model.parameters(), lr=o.lr)

    first_loss = final_loss = None
    train_start = time.monotonic()
    source = batches(o, volumes)
    for step in range(o.steps):
        step_start = time.monotonic()
        image, label = next(source)
        image, label = image.to(device), label.to(device)
        optimizer.zero_grad()
        # Autocast keeps fp32 master weights and runs the convolutions in bf16.
        with torch.autocast(o.device, dtype=torch.bfloat16, enabled=o.precision == "bf16"):
            prob = model(image)
        loss = dice_bce_loss(prob.float(), label)
        loss.backward()
        optimizer.step()
        value = loss.item()
        first_loss = value if first_loss is None else first_loss
        final_loss = value
        print(f"step {step + 1}/{o.steps} loss {value:.5f} {time.monotonic() - step_start:.3f} s",
              flush=True)
    train_s = time.monotonic() - train_start

    summary = {
        "workload": "unet3d-train", "implementation": "pytorch",
        "parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "steps": o.steps, "batch_size": o.batch_size, "shape": o.shape,
        "channels": o.channels, "classes": o.classes, "filters": o.filters, "levels": o.levels,
        "precision": o.precision, "device": o.device, "threads": torch.get_num_threads(),
        "seed": o.seed, "data": "nifti" if volumes else "synthetic", "workers": o.workers,
        "first_loss": json_number(first_loss), "final_loss": json_number(final_loss),
        "step_s": train_s / o.steps if o.steps else None,
        "elapsed_s": time.monotonic() - start,
    }
    if o.device == "cuda":
        summary["cuda_max_memory_reserved_bytes"] = torch.cuda.max_memory_reserved()
        summary["cuda_max_memory_allocated_bytes"] = torch.cuda.max_memory_allocated()
    print(json.dumps(summary, separators=(",", ":")), flush=True)
    return 0


def main(argv):
    try:
        o = parse_options(argv)
    except UsageError as e:
        print(f"train.py: {e}", file=sys.stderr)
        return 2
    try:
        return train(o)
    except (ValueError, OSError) as e:
        print(f"train.py: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
