"""One rank of the DDP step benchmark: a multi-layer perceptron of about
--params parameters wrapped in DistributedDataParallel, on the backend
given; times --steps training steps (forward, backward with DDP's
overlapped gradient all-reduce, SGD step) after --warmup, then as many
steps under no_sync() (the same work without the all-reduce), and prints
on rank 0 the medians of the ranks' slowest:

    params <n> step_ms <median> min_ms <min> max_ms <max> no_sync_ms <median>

step_ms - no_sync_ms is what the gradient all-reduce adds to a step."""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

try:
    import hora_torch  # noqa: F401
except ImportError:
    hora_torch = None


def mlp(params):
    """Three linear layers, the middle one square, sized to about `params`."""
    # hidden -> 2 hidden -> 2 hidden -> 16: about 2 h^2 + 4 h^2 parameters.
    hidden = int((params / 6) ** 0.5)
    model = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.ReLU(),
                          nn.Linear(2 * hidden, 2 * hidden), nn.ReLU(),
                          nn.Linear(2 * hidden, 16))
    return model, hidden


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="hora")
    parser.add_argument("--params", type=int, default=25_000_000)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model, width = mlp(args.params)
    model = DDP(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, width)
    y = torch.randn(args.batch, 16)

    def step_ms():
        dist.barrier()
        start = time.perf_counter()
        optimizer.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        elapsed = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
        return elapsed.item() * 1e3

    times = [step_ms() for _ in range(args.warmup + args.steps)][args.warmup:]
    with model.no_sync():
        local = [step_ms() for _ in range(args.steps)]
    if rank == 0:
        total = sum(p.numel() for p in model.parameters())
        print(f"params {total} step_ms {statistics.median(times):.1f} "
              f"min_ms {min(times):.1f} max_ms {max(times):.1f} "
              f"no_sync_ms {statistics.median(local):.1f}", flush=True)
    dist.barrier()
    # Leave without tearing the model and its group down: torch 1.13's gloo
    # group can deadlock in its destructor when a DDP reducer releases it
    # while one of its callbacks waits for the interpreter lock.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
