"""Linear regression data-parallel, as in the DistributedDataParallel
tutorials: one nn.Linear fitted to a noisy plane with SGD, each rank on its
share of the samples. Only the backend differs: "hora" by default.

    hora-run -n 2 python3 linear_regression.py
    torchrun --nproc-per-node 2 linear_regression.py --backend gloo
"""

import argparse

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

try:
    import hora_torch  # noqa: F401  registers the "hora" backend
except ImportError:
    hora_torch = None


def synthetic_plane(samples, features=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(samples, features, generator=g)
    true_w = torch.arange(1, features + 1, dtype=torch.float32)
    y = x @ true_w + 0.5 + 0.01 * torch.randn(samples, generator=g)
    return TensorDataset(x, y.unsqueeze(1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="hora")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    dataset = synthetic_plane(args.samples)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=32, sampler=sampler)
    indices = []
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        indices.append(list(iter(sampler)))
        for x, y in loader:
            optimizer.zero_grad()
            nn.functional.mse_loss(model(x), y).backward()
            optimizer.step()
    if rank == 0:
        w = model.module.weight.detach().flatten().tolist()
        print("fitted weights:", " ".join(f"{v:.3f}" for v in w),
              f"bias {model.module.bias.item():.3f}", flush=True)
    if args.out:
        torch.save({"parameters": model.module.state_dict(), "indices": indices},
                   f"{args.out}.rank{rank}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
