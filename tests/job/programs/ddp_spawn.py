"""A gloo DistributedDataParallel job of two ranks started by torch.multiprocessing.spawn: each
rank trains a small model for two steps, then holds a tensor of the size it is given while both
wait at a barrier, so that the job's peak holds both at once.

    ddp_spawn.py RANK0_MIB RANK1_MIB RENDEZVOUS_FILE
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

MIB = 1 << 20


def rank_main(rank, sizes, rendezvous):
    dist.init_process_group("gloo", init_method="file://" + rendezvous, rank=rank, world_size=2)
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(64, 8))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(2):
        optimizer.zero_grad()
        loss = model(torch.randn(16, 64, generator=torch.Generator().manual_seed(step))).square().mean()
        loss.backward()
        optimizer.step()
    held = torch.ones(sizes[rank] * MIB // 4, dtype=torch.float32)  # written: its pages are real
    dist.barrier()  # both ranks hold theirs
    dist.barrier()
    # One write, so that the two ranks' lines never interleave.
    os.write(1, f"rank {rank} {os.getpid()} {held.numel()} {float(loss):.4f}\n".encode())
    del held
    dist.destroy_process_group()


def main():
    sizes = (int(sys.argv[1]), int(sys.argv[2]))
    mp.spawn(rank_main, args=(sizes, sys.argv[3]), nprocs=2, join=True)


if __name__ == "__main__":
    main()
