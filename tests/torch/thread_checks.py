"""hora's process groups as threads of one process, meeting through one
in-memory store: collectives on each thread's group, checked exactly."""

import datetime
import threading

import torch
import torch.distributed as dist

import hora_torch


def run_threads(nranks):
    store = dist.HashStore()
    failures = []

    def rank_main(rank):
        try:
            pg = hora_torch._C.create_process_group(store, rank, nranks, datetime.timedelta(seconds=30))
            t = torch.arange(1031, dtype=torch.int64) * (rank + 1)
            pg.allreduce([t]).wait()
            want = torch.arange(1031, dtype=torch.int64) * sum(range(1, nranks + 1))
            if not torch.equal(t, want):
                failures.append(f"rank {rank}: allreduce wrong")
            b = torch.full((7,), float(rank))
            opts = dist.BroadcastOptions()
            opts.rootRank = nranks - 1
            pg.broadcast([b], opts).wait()
            if not torch.equal(b, torch.full((7,), float(nranks - 1))):
                failures.append(f"rank {rank}: broadcast wrong")
            outs = [[torch.zeros(3, dtype=torch.int32) for _ in range(nranks)]]
            pg.allgather(outs, [torch.full((3,), rank, dtype=torch.int32)]).wait()
            if [o.tolist() for o in outs[0]] != [[r] * 3 for r in range(nranks)]:
                failures.append(f"rank {rank}: allgather wrong")
            pg.barrier().wait()
        except Exception as error:
            failures.append(f"rank {rank}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(nranks)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=60)
        if th.is_alive():
            failures.append("a rank thread hung")
    return failures
