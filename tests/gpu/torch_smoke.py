"""PyTorch's "nccl" backend running on hora: torch.distributed with hora's
libnccl.so.2 in place of NVIDIA's (LD_PRELOAD), ranks as processes sharing
GPU 0 (NVIDIA's NCCL refuses that; hora does not). Each collective DDP
training relies on, then one DistributedDataParallel step, checked against
values computed here. Run it with torchrun:

    LD_PRELOAD=build/src/libnccl.so.2 torchrun --nproc_per_node=2 tests/gpu/torch_smoke.py

It fails unless the process really loaded hora's library.
"""
import torch
import torch.distributed as dist

from torch_on_hora import finish, run, start


def main():
    rank, world, device = start()

    n = (1 << 20) + 7
    x = torch.full((n,), float(rank + 1), device=device)
    dist.all_reduce(x)
    assert torch.all(x == world * (world + 1) / 2), "all_reduce"

    y = torch.arange(n, device=device, dtype=torch.float32) if rank == 0 else torch.zeros(n, device=device)
    dist.broadcast(y, src=0)
    assert torch.equal(y, torch.arange(n, device=device, dtype=torch.float32)), "broadcast"

    part = torch.full((1000,), rank, device=device, dtype=torch.int64)
    gathered = torch.empty(1000 * world, device=device, dtype=torch.int64)
    dist.all_gather_into_tensor(gathered, part)
    assert torch.equal(gathered, torch.arange(world, device=device).repeat_interleave(1000)), "all_gather"

    full = torch.arange(1000 * world, device=device, dtype=torch.float32)
    mine = torch.empty(1000, device=device)
    dist.reduce_scatter_tensor(mine, full)
    assert torch.equal(mine, world * torch.arange(1000 * rank, 1000 * (rank + 1), device=device, dtype=torch.float32)), \
        "reduce_scatter"

    # One DDP step: every rank's gradient is the average of all ranks'.
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8).to(device)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0])
    inputs = torch.full((4, 64), float(rank + 1), device=device)
    ddp(inputs).sum().backward()
    # d(sum(W x + b))/dW = sum over the batch of x: 4 * (rank + 1) per entry, averaged over ranks.
    want = 4 * sum(r + 1 for r in range(world)) / world
    assert torch.allclose(model.weight.grad, torch.full_like(model.weight.grad, want)), "DDP gradient"
    assert torch.allclose(model.bias.grad, torch.full_like(model.bias.grad, 4.0)), "DDP bias gradient"

    finish(rank, "all_reduce, broadcast, all_gather, reduce_scatter and a DDP step")


if __name__ == "__main__":
    run(main)
