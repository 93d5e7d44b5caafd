"""PyTorch's point-to-point calls on hora's "nccl" backend, ranks as
processes sharing GPU 0 (as torch_smoke.py): send/recv around the ring,
batch_isend_irecv, all_to_all_single, gather and scatter, each checked
against values computed here. Run it with torchrun:

    LD_PRELOAD=build/src/libnccl.so.2 torchrun --nproc_per_node=2 tests/gpu/torch_p2p.py

It fails unless the process really loaded hora's library.
"""
import torch
import torch.distributed as dist

from torch_on_hora import finish, run, start


def main():
    rank, world, device = start()
    after, before = (rank + 1) % world, (rank - 1) % world
    n = (1 << 20) + 3

    # Even ranks send first, odd ranks receive first: blocking calls pair up.
    mine = torch.full((n,), float(rank), device=device)
    got = torch.empty(n, device=device)
    if rank % 2 == 0:
        dist.send(mine, dst=after)
        dist.recv(got, src=before)
    else:
        dist.recv(got, src=before)
        dist.send(mine, dst=after)
    assert torch.all(got == before), "send/recv"

    got.zero_()
    requests = dist.batch_isend_irecv([dist.P2POp(dist.isend, mine, after), dist.P2POp(dist.irecv, got, before)])
    for request in requests:
        request.wait()
    assert torch.all(got == before), "batch_isend_irecv"

    block = 1000
    send = torch.arange(world * block, device=device, dtype=torch.int64) + 100000 * rank
    recv = torch.empty_like(send)
    dist.all_to_all_single(recv, send)
    want = torch.cat([torch.arange(rank * block, (rank + 1) * block, device=device) + 100000 * p for p in range(world)])
    assert torch.equal(recv, want), "all_to_all_single"

    part = torch.full((block,), rank, device=device, dtype=torch.int64)
    parts = [torch.empty_like(part) for _ in range(world)] if rank == 0 else None
    dist.gather(part, parts, dst=0)
    if rank == 0:
        assert all(torch.all(parts[p] == p) for p in range(world)), "gather"

    pieces = [torch.full((block,), 10 * p, device=device, dtype=torch.int64) for p in range(world)] if rank == 0 else None
    piece = torch.empty(block, device=device, dtype=torch.int64)
    dist.scatter(piece, pieces, src=0)
    assert torch.all(piece == 10 * rank), "scatter"

    finish(rank, "send/recv, batch_isend_irecv, all_to_all_single, gather and scatter")


if __name__ == "__main__":
    run(main)
