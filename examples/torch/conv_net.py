"""The classic small convolutional network (two conv layers, three linear)
trained data-parallel with DistributedDataParallel, on CPU, with synthetic
images in place of a download. Only the backend differs from the usual
tutorial program: "hora" by default, any other with --backend.

    hora-run -n 2 python3 conv_net.py
    torchrun --nproc-per-node 2 conv_net.py --backend gloo

Each epoch: DistributedSampler.set_epoch, one pass of SGD, rank 0 saves a
checkpoint, a barrier, and every rank loads it. --out saves the final
parameters and the sampler's indices (what the tests compare)."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

try:
    import hora_torch  # noqa: F401  registers the "hora" backend
except ImportError:
    hora_torch = None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def synthetic_images(samples, seed=0):
    """32x32 colour images and labels, the same on every rank and run."""
    g = torch.Generator().manual_seed(seed)
    images = torch.randn(samples, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (samples,), generator=g)
    return TensorDataset(images, labels)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="hora")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--samples", type=int, default=480)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--checkpoint", default="conv_net_checkpoint.pt")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    dist.init_process_group(args.backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)  # DDP broadcasts rank 0's parameters anyway
    model = DDP(Net())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    dataset = synthetic_images(args.samples)
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    indices = []

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        indices.append(list(iter(sampler)))
        total = 0.0
        for images, labels in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
            total += loss.item()
        if rank == 0:
            torch.save(model.module.state_dict(), args.checkpoint)
            print(f"epoch {epoch}: loss {total / len(loader):.4f} (checkpoint saved)", flush=True)
        dist.barrier()  # the checkpoint is on disk before anyone reads it
        model.module.load_state_dict(torch.load(args.checkpoint))

    if args.out:
        torch.save({"parameters": model.module.state_dict(), "indices": indices},
                   f"{args.out}.rank{rank}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
