"""Process subgroups of PyTorch's "nccl" backend on hora: with the world
group bound to a device (init_process_group(device_id=...)), torch makes a
new group's communicator with ncclCommSplit from the world's, and a rank
left out of the group passes NCCL_SPLIT_NOCOLOR. Run it as torch_smoke.py,
blocking and with TORCH_NCCL_USE_COMM_NONBLOCKING=1 (non-blocking init and
split, which torch then polls with ncclCommGetAsyncError):

    LD_PRELOAD=build/src/libnccl.so.2 torchrun --nproc_per_node=2 tests/gpu/torch_groups.py
"""
import os

import torch
import torch.distributed as dist

from torch_on_hora import finish, run, start


def main():
    rank, world, device = start()

    everyone = dist.new_group(list(range(world)))
    x = torch.full((1000,), float(rank + 1), device=device)
    dist.all_reduce(x, group=everyone)
    assert torch.all(x == world * (world + 1) / 2), "all_reduce on a group of every rank"

    # Rank 0 alone: the others take part in the split and get no communicator.
    alone = dist.new_group([0])
    if rank == 0:
        y = torch.arange(1000, device=device, dtype=torch.float32)
        dist.all_reduce(y, group=alone)
        assert torch.equal(y, torch.arange(1000, device=device, dtype=torch.float32)), "all_reduce of one rank"

    # The world still works after its splits.
    z = torch.full((7,), float(rank), device=device)
    dist.all_reduce(z)
    assert torch.all(z == world * (world - 1) / 2), "all_reduce on the world after the splits"

    mode = "non-blocking" if os.environ.get("TORCH_NCCL_USE_COMM_NONBLOCKING") == "1" else "blocking"
    dist.destroy_process_group(everyone)
    dist.destroy_process_group(alone)
    finish(rank, f"new_group ({mode} communicators) and collectives on it")


if __name__ == "__main__":
    run(main)
