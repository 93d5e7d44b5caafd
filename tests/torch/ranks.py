"""Starts a script as N rank processes (one per rank, like torchrun) and
collects what each printed and how it ended, with a deadline: a rank still
running at the deadline fails the test instead of hanging it."""

import os
import random
import socket
import subprocess
import sys
import time


def free_port():
    """A port free just now, below the kernel's ephemeral range (ports
    32768 and up by default), so that no other connection on the machine is
    handed it before rank 0 listens on it."""
    for _ in range(64):
        port = random.randint(10000, 32000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Rank:
    def __init__(self, rank, returncode, output):
        self.rank = rank
        self.returncode = returncode
        self.output = output

    def __repr__(self):
        return f"rank {self.rank} exit {self.returncode}:\n{self.output}"


def run_ranks(script, nranks, args=(), extra_env=None, per_rank_env=None, deadline_s=120):
    """Runs `script args` as ranks 0..nranks-1 with torchrun's variables
    (env:// init) and returns one Rank per process."""
    port = free_port()
    procs = []
    for rank in range(nranks):
        env = dict(os.environ)
        env.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(nranks),
                   LOCAL_WORLD_SIZE=str(nranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.update(extra_env or {})
        if per_rank_env:
            env.update(per_rank_env(rank))
        procs.append(subprocess.Popen([sys.executable, script, *map(str, args)], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    end = time.monotonic() + deadline_s
    results = []
    for rank, proc in enumerate(procs):
        try:
            out, _ = proc.communicate(timeout=max(0.1, end - time.monotonic()))
            results.append(Rank(rank, proc.returncode, out))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            out, _ = proc.communicate()
            results.append(Rank(rank, "hung (killed at the deadline)", out))
    return results
