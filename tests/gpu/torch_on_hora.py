"""What the PyTorch checks on hora share (torch_smoke.py, torch_p2p.py):
starting the "nccl" process group on GPU 0 with proof that hora's
libnccl.so.2 (LD_PRELOAD) is the library the process loaded, ending it, and
turning a failed check into a message and exit status 1."""
import os
import sys

import torch
import torch.distributed as dist


def loaded_nccl():
    with open("/proc/self/maps") as maps:
        return sorted({os.path.realpath(line.split()[-1]) for line in maps if "libnccl.so" in line})


def start():
    """Joins the process group on cuda:0; returns (rank, world, device)."""
    torch.cuda.set_device(0)
    device = torch.device("cuda", 0)
    dist.init_process_group("nccl", device_id=device)
    expected = os.path.realpath(os.environ.get("LD_PRELOAD", ""))
    assert expected in loaded_nccl(), f"hora's libnccl.so.2 is not loaded: {loaded_nccl()}"
    return dist.get_rank(), dist.get_world_size(), device


def finish(rank, checked):
    dist.barrier()
    torch.cuda.synchronize()
    dist.destroy_process_group()
    print(f"rank {rank}: {checked} on hora: ok", flush=True)


def run(main):
    try:
        main()
    except AssertionError as error:
        print(f"FAILED: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
