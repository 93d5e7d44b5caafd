"""One rank of the torch.distributed all-reduce benchmark: float32 tensors
from --min-bytes to --max-bytes (doubling), on the backend given, timed as
nccl-tests times them (a barrier, then --iters back-to-back calls, the
slowest rank's mean). Prints one line per size on rank 0:

    bytes <n> time_us <t> algbw <GB/s> busbw <GB/s>

busbw = algbw * 2 (n - 1) / n, nccl-tests' bus bandwidth for all-reduce.
Every result is checked: the inputs are small integers, so the sum is
exact whatever the order."""

import argparse
import time

import torch
import torch.distributed as dist

try:
    import hora_torch  # noqa: F401
except ImportError:
    hora_torch = None


def iterations_for(nbytes, budget_bytes):
    return max(3, min(50, budget_bytes // max(nbytes, 1)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="hora")
    parser.add_argument("--min-bytes", type=int, default=1 << 20)
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    parser.add_argument("--budget-bytes", type=int, default=2 << 30,
                        help="bytes moved per size, which sets the iteration count")
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    rank, n = dist.get_rank(), dist.get_world_size()
    nbytes = args.min_bytes
    while nbytes <= args.max_bytes:
        count = nbytes // 4
        t = torch.full((count,), float(rank + 1))
        dist.all_reduce(t)  # warm-up: connections, pages
        want = float(n * (n + 1) // 2)
        iters = iterations_for(nbytes, args.budget_bytes)
        t.fill_(float(rank + 1))
        dist.barrier()
        start = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(t)
        elapsed = (time.perf_counter() - start) / iters
        # All-reduce of a sum repeated: the value grows by a factor n each
        # time after the first; check the first call's result separately.
        t.fill_(float(rank + 1))
        dist.all_reduce(t)
        if not torch.all(t == want):
            raise SystemExit(f"rank {rank}: wrong all-reduce result at {nbytes} bytes")
        slowest = torch.tensor([elapsed], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        if rank == 0:
            seconds = slowest.item()
            algbw = nbytes / seconds / 1e9
            busbw = algbw * 2 * (n - 1) / n
            print(f"bytes {nbytes} time_us {seconds * 1e6:.1f} algbw {algbw:.3f} busbw {busbw:.3f}",
                  flush=True)
        nbytes *= 2
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
