"""A parent holding a numpy array forks two children that each allocate their own; every array
is written once so its pages are real. `together`: the three hold at once (a barrier), then the
children exit; `apart`: the children hold one after the other, the second after the first ended;
`killed`: one child holds its array until the parent kills it with SIGKILL, then the parent
allocates as much again (the job must not still count the dead child's).

    fork_arrays.py MODE PARENT_MIB CHILD_MIB
"""
import multiprocessing as mp
import os
import sys
import time

import numpy as np

MIB = 1 << 20


def hold(mib, barrier):
    a = np.ones(mib * MIB, dtype=np.uint8)  # written: every page is the child's own
    if barrier is not None:
        barrier.wait()  # all three hold theirs now
        barrier.wait()  # the parent has seen it
    del a
    os._exit(0)


def hold_until_killed(mib, ready):
    a = np.ones(mib * MIB, dtype=np.uint8)
    ready.set()
    time.sleep(600)
    print(a[0])


def main():
    mode, parent_mib, child_mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    ctx = mp.get_context("fork")
    parent = np.ones(parent_mib * MIB, dtype=np.uint8)
    if mode == "together":
        barrier = ctx.Barrier(3)
        children = [ctx.Process(target=hold, args=(child_mib, barrier)) for _ in range(2)]
        for c in children:
            c.start()
        barrier.wait()
        barrier.wait()
        for c in children:
            c.join()
    elif mode == "killed":
        ready = ctx.Event()
        child = ctx.Process(target=hold_until_killed, args=(child_mib, ready))
        child.start()
        ready.wait()
        child.kill()
        child.join()
        time.sleep(1.5)  # the root's reporter notices the member is gone (each 100 ms)
        more = np.ones(child_mib * MIB, dtype=np.uint8)
        del more
    else:
        for _ in range(2):
            c = ctx.Process(target=hold, args=(child_mib, None))
            c.start()
            c.join()
    print("parent", os.getpid(), int(parent[0]))


if __name__ == "__main__":
    main()
