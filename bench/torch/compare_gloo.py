#!/usr/bin/python3
"""hora against gloo under torch.distributed, CPU tensors, in one run:
all-reduce bus bandwidth from 1 MiB to 256 MiB and the DDP step time of a
25 M- and a 100 M-parameter model. Each configuration runs in --repeats
separate launches (default 5) alternating the backends (hora first, then
gloo first, ...); the report gives the median and [min-max] of the
launches, and the ratio of the medians. Beside them, the machine's
single-core memory copy bandwidth, the ceiling a shared-memory all-reduce
works under.

    bench/torch/compare_gloo.py [--repeats 5] [--nranks 2] [--out DIR]

Needs hora_torch built (build/python) and hora-run (build/tools)."""

import argparse
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BACKENDS = ("hora", "gloo")


def launch(args, script, backend, extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(args.build, "python"),
                                                      env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")
    command = [os.path.join(args.build, "tools", "hora-run", "hora-run"), "-n", str(args.nranks),
               sys.executable, os.path.join(HERE, script), "--backend", backend, *extra]
    done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}")
    return [line.split() for line in done.stdout.splitlines()
            if line.startswith(("bytes ", "params "))]


def copy_bandwidth():
    """GB/s of one core copying 256 MiB (read + write counted once each)."""
    src = torch.ones(64 << 20)
    dst = torch.empty_like(src)
    torch.set_num_threads(1)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        dst.copy_(src)
        best = min(best, time.perf_counter() - start)
    return 2 * src.numel() * 4 / best / 1e9


def spread(values, fmt="{:.2f}"):
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=int(os.environ.get("REPEATS", 5)))
    parser.add_argument("--nranks", type=int, default=2)
    parser.add_argument("--build", default=os.path.join(REPO, "build"))
    parser.add_argument("--max-bytes", type=int, default=256 << 20)
    parser.add_argument("--models", default="25000000,100000000")
    parser.add_argument("--parts", default="allreduce,ddp",
                        help="which measurements to run: allreduce, ddp or both")
    parser.add_argument("--out", default=None, help="also write the report here")
    args = parser.parse_args()

    parts = args.parts.split(",")
    busbw = {b: {} for b in BACKENDS}
    steps = {b: {} for b in BACKENDS}
    local = {b: {} for b in BACKENDS}
    for repeat in range(args.repeats):
        order = BACKENDS if repeat % 2 == 0 else BACKENDS[::-1]
        for backend in order:
            print(f"launch {repeat + 1}/{args.repeats}: {backend}", file=sys.stderr, flush=True)
            if "allreduce" in parts:
                for row in launch(args, "allreduce_busbw.py", backend,
                                  ["--max-bytes", str(args.max_bytes)]):
                    busbw[backend].setdefault(int(row[1]), []).append(float(row[7]))
            if "ddp" in parts:
                for params in map(int, args.models.split(",")):
                    row, = launch(args, "ddp_step.py", backend, ["--params", str(params)])
                    steps[backend].setdefault(int(row[1]), []).append(float(row[3]))
                    local[backend].setdefault(int(row[1]), []).append(float(row[3]) - float(row[9]))

    lines = [f"# torch {torch.__version__}, {args.nranks} ranks (hora-run, one core each), "
             f"{args.repeats} launches per backend alternating; median [min-max]",
             f"# single-core memory copy bandwidth: {copy_bandwidth():.1f} GB/s",
             ""]
    if busbw["hora"]:
        lines += ["all_reduce float32 busbw (GB/s)",
                  f"{'bytes':>10}  {'hora':>22}  {'gloo':>22}  hora/gloo"]
    for size in sorted(busbw["hora"]):
        h, g = busbw["hora"][size], busbw["gloo"][size]
        lines.append(f"{size:>10}  {spread(h):>22}  {spread(g):>22}  "
                     f"{statistics.median(h) / statistics.median(g):.2f}x")
    if steps["hora"]:
        lines += ["", "DDP step time (ms; forward, backward with gradient all-reduce, SGD step),",
                  "and what the all-reduce adds: step time minus the same step under no_sync()",
                  f"{'parameters':>10}  {'hora step':>18}  {'gloo step':>18}  gloo/hora"
                  f"  {'hora adds':>18}  {'gloo adds':>18}"]
    for params in sorted(steps["hora"]):
        h, g = steps["hora"][params], steps["gloo"][params]
        hl, gl = local["hora"][params], local["gloo"][params]
        lines.append(f"{params:>10}  {spread(h, '{:.0f}'):>18}  {spread(g, '{:.0f}'):>18}  "
                     f"{statistics.median(g) / statistics.median(h):8.2f}x"
                     f"  {spread(hl, '{:.0f}'):>18}  {spread(gl, '{:.0f}'):>18}")
    report = "\n".join(lines)
    print(report)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "torch_vs_gloo.txt"), "w") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    main()
