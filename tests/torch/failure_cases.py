"""One rank of a job that goes wrong on purpose; argv[1] names the case.
Each rank prints one line 'RESULT <what happened> <seconds> <message>' for
the test to read."""

import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

import hora_torch  # noqa: F401


def report(what, started, message=""):
    print(f"RESULT {what} {time.monotonic() - started:.2f} {message}".replace("\n", " | "), flush=True)


def attempt(call):
    started = time.monotonic()
    try:
        call()
        report("ok", started)
    except Exception as error:  # the text is what the test checks
        report("raised", started, f"{type(error).__name__}: {error}")


def main():
    case = sys.argv[1]
    timeout = float(os.environ.get("CASE_TIMEOUT_S", "60"))
    dist.init_process_group("hora", timeout=datetime.timedelta(seconds=timeout))
    rank, n = dist.get_rank(), dist.get_world_size()
    t = torch.ones(1 << 16)
    dist.all_reduce(t)  # every connection is up and working

    if case == "bad_arguments":
        attempt(lambda: dist.all_reduce(torch.ones(4, dtype=torch.int32), op=dist.ReduceOp.BAND))
        attempt(lambda: dist.all_gather([torch.ones(2)] * (n + 1), torch.ones(2)))
        attempt(lambda: dist.all_gather([torch.ones(2, dtype=torch.int32)] * n, torch.ones(2)))
        attempt(lambda: dist.all_reduce(torch.ones(2, dtype=torch.bool), op=dist.ReduceOp.AVG))
        attempt(lambda: dist.all_to_all_single(torch.empty(5), torch.ones(5)))
        # The group still works afterwards.
        u = torch.full((3,), float(rank))
        attempt(lambda: dist.all_reduce(u))
        assert u.tolist() == [float(sum(range(n)))] * 3, u
    elif case == "peer_dies":
        if rank == n - 1:
            os._exit(3)  # gone without a word, mid-job
        attempt(lambda: [dist.all_reduce(t) for _ in range(50)])
    elif case == "peer_silent":
        if rank == n - 1:
            time.sleep(timeout * 10)  # alive but never joins the collective
            return
        attempt(lambda: dist.all_reduce(t))
    elif case == "tags_crossed":
        # Same-sized messages received in another order than sent: tags are
        # not matched, but each carries its own, so the receive fails on
        # the receiver, and the sender's next call, instead of swapping them.
        if rank == 0:
            dist.send(torch.full((4,), 1.0), 1, tag=5)
            dist.send(torch.full((4,), 2.0), 1, tag=7)
            attempt(lambda: dist.all_reduce(t))
        else:
            b = torch.zeros(4)
            attempt(lambda: dist.recv(b, 0, tag=7))
            if b.tolist() != [0.0] * 4:
                print(f"RESULT wrong 0 the receive of tag 7 took {b.tolist()}", flush=True)
    sys.stdout.flush()
    os._exit(0)  # skip destroy: the group is broken in the failure cases


if __name__ == "__main__":
    main()
