#!/usr/bin/python3
"""Reads the step traces hora writes with HORA_TRACE=prefix (one file per
rank and communicator, prefix.rank<r>.<n>.tsv; see docs/environment.md) and
says where the operations' time went on each rank: its own work (copies and
reductions: the time between waits) and each kind of wait (for a peer's
data, for room in a peer's FIFO, for its sends to leave), how it waited
(yields of the core, sleeps) and how many bytes its peers had not yet taken
from it when a wait began.

    trace_summary.py FILE... [--name NAME] [--bytes B] [--skip N]
                             [--figure OUT.png|OUT.svg|OUT.pdf] [--ops K]
                             [--xmax MS] [--title TEXT]

The files are those of one communicator, one per rank (a rank given twice
is refused). Operations are selected by name (AllReduce, AllGather,
point-to-point, ...) and size per rank; what is not given is taken from
the first file: the largest size (of that name, where one is given) and,
of the operations of that size, the name that took the most time there
(a benchmark's own small calls, such as its barriers, are left out). A
file whose bound on records was reached says so, and the summary warns:
its last operations lack waits. --skip leaves out the first N selected operations of each
rank (warm-up). --figure draws K (3) consecutive selected operations of every
rank on one time axis: operations as light bars, waits coloured by kind;
--xmax fixes the axis (milliseconds), so that figures of several runs compare.
A file that is not a step trace is refused, naming the line.

B and N are whole numbers from 0, K one from 1, MS a number above 0; the
figure's format follows its extension (.png, .svg or .pdf). A command line
outside these is refused with exit status 2 before any file is read; a file
that is not a trace exits with 1.
"""

import argparse
import math
import os
import statistics
import sys

# The figure formats: each one matplotlib writes without extra packages.
FIGURE_EXTENSIONS = (".png", ".svg", ".pdf")

HEADER = ["start_ns", "duration_ns", "record", "what", "op", "bytes", "polls", "yields", "sleeps"]


class Malformed(Exception):
    pass


def read_trace(path):
    """(rank, ops, waits): ops as dicts by number, waits as a list."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except UnicodeDecodeError:
        raise Malformed(f"{path}: not a hora step trace (not text)")
    if not lines or not lines[0].startswith("# hora step trace: rank "):
        raise Malformed(f"{path}:1: not a hora step trace (no '# hora step trace' line)")
    try:
        rank = int(lines[0].split("rank ", 1)[1].split(" ", 1)[0])
    except ValueError:
        raise Malformed(f"{path}:1: no rank in the first line")
    dropped = lines[0].rsplit(", ", 1)[-1]
    if dropped.endswith(" dropped") and dropped.split(" ", 1)[0] not in ("0", ""):
        print(f"trace_summary.py: warning: {path} reached its bound on records ({dropped}): "
              "its last operations lack waits (HORA_TRACE_RECORDS)", file=sys.stderr)
    if len(lines) < 2 or lines[1].split("\t") != HEADER:
        raise Malformed(f"{path}:2: the header must be {' '.join(HEADER)}")
    ops, waits = {}, []
    for number, line in enumerate(lines[2:], start=3):
        fields = line.split("\t")
        if len(fields) != len(HEADER):
            raise Malformed(f"{path}:{number}: {len(fields)} fields, {len(HEADER)} expected")
        try:
            start, duration, op, size, polls, yields, sleeps = (
                int(fields[0]), int(fields[1]), int(fields[4]), int(fields[5]),
                int(fields[6]), int(fields[7]), int(fields[8]))
        except ValueError:
            raise Malformed(f"{path}:{number}: a number field is not a whole number")
        record = {"start": start, "duration": duration, "what": fields[3], "op": op, "bytes": size,
                  "yields": yields, "sleeps": sleeps, "polls": polls}
        if fields[2] == "op":
            ops[op] = dict(record, waits=[])
        elif fields[2] == "wait":
            waits.append(record)
        else:
            raise Malformed(f"{path}:{number}: record '{fields[2]}' is neither op nor wait")
    for w in waits:
        if w["op"] in ops:
            ops[w["op"]]["waits"].append(w)
    return rank, ops


def select(ops, name, size, skip):
    chosen = [op for _, op in sorted(ops.items())
              if op["what"] == name and op["bytes"] == size and op["duration"] >= 0]
    return chosen[skip:]


def largest(ops, name=None, size=None):
    total = {}
    for op in ops.values():
        if op["duration"] >= 0 and name in (None, op["what"]) and size in (None, op["bytes"]):
            key = (op["what"], op["bytes"])
            total[key] = total.get(key, 0) + op["duration"]
    return max(total, key=lambda key: (key[1], total[key])) if total else None


def summarize(rank, chosen):
    durations = [op["duration"] for op in chosen]
    total = sum(durations)
    by_kind = {}
    queued = []
    yields = sleeps = count = 0
    for op in chosen:
        for w in op["waits"]:
            by_kind[w["what"]] = by_kind.get(w["what"], 0) + w["duration"]
            queued.append(w["bytes"])
            yields += w["yields"]
            sleeps += w["sleeps"]
            count += 1
    waited = sum(by_kind.values())
    n = len(chosen)
    return {
        "rank": rank, "ops": n,
        "median_us": statistics.median(durations) / 1e3, "min_us": min(durations) / 1e3,
        "max_us": max(durations) / 1e3,
        "work": (total - waited) / total if total else 0.0,
        "kinds": {k: v / total for k, v in by_kind.items()} if total else {},
        "waits_per_op": count / n, "yields_per_op": yields / n, "sleeps_per_op": sleeps / n,
        "queued_kib": statistics.median(queued) / 1024 if queued else 0.0,
    }


def print_table(rows, name, size):
    kinds = sorted({k for row in rows for k in row["kinds"]})
    print(f"{name} of {size} bytes per rank: share of each rank's operation time")
    head = ["rank", "ops", "median us", "min us", "max us", "own work"] + kinds + \
        ["waits/op", "yields/op", "sleeps/op", "queued KiB"]
    print("\t".join(head))
    for row in rows:
        cells = [str(row["rank"]), str(row["ops"]), f"{row['median_us']:.1f}", f"{row['min_us']:.1f}",
                 f"{row['max_us']:.1f}", f"{row['work']:.1%}"]
        cells += [f"{row['kinds'].get(k, 0.0):.1%}" for k in kinds]
        cells += [f"{row['waits_per_op']:.1f}", f"{row['yields_per_op']:.1f}",
                  f"{row['sleeps_per_op']:.2f}", f"{row['queued_kib']:.0f}"]
        print("\t".join(cells))


def draw(path, ranks, count, title, xmax=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = {rank: chosen[:count] for rank, chosen in ranks.items() if chosen}
    if not shown:
        raise Malformed("no operation to draw")
    origin = min(ops[0]["start"] for ops in shown.values())
    kinds = sorted({w["what"] for ops in shown.values() for op in ops for w in op["waits"]})
    colours = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.6 * len(shown)))
    for lane, (rank, ops) in enumerate(sorted(shown.items())):
        for op in ops:
            ax.barh(lane, op["duration"] / 1e6, left=(op["start"] - origin) / 1e6, height=0.7,
                    color="0.85", edgecolor="0.5", linewidth=0.5)
            for w in op["waits"]:
                ax.barh(lane, max(w["duration"], 1) / 1e6, left=(w["start"] - origin) / 1e6, height=0.5,
                        color=colours(kinds.index(w["what"]) % 10), linewidth=0)
    ax.set_yticks(range(len(shown)), [f"rank {r}" for r in sorted(shown)])
    ax.set_xlabel("time (ms)")
    if xmax is not None:
        ax.set_xlim(0, xmax)
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color="0.85", ec="0.5", lw=0.5)] + \
        [plt.Rectangle((0, 0), 1, 1, color=colours(i % 10)) for i in range(len(kinds))]
    ax.legend(handles, ["operation (own work where no wait)"] + kinds, loc="upper center",
              bbox_to_anchor=(0.5, -0.35 if len(shown) < 4 else -0.15), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path)


def check_arguments(parser, args):
    """Refuses, through parser.error (exit status 2), a number out of its
    range or a figure format matplotlib would only reject after the summary
    is printed: a negative --skip would silently keep only the last
    operations, a wrong result rather than an error."""
    for flag, value, least in (("--skip", args.skip, 0), ("--ops", args.ops, 1), ("--bytes", args.bytes, 0)):
        if value is not None and value < least:
            parser.error(f"{flag} must be a whole number of at least {least}, got {value}")
    if args.xmax is not None and not (math.isfinite(args.xmax) and args.xmax > 0):
        parser.error(f"--xmax must be a number of milliseconds above 0, got {args.xmax}")
    if args.figure is not None and os.path.splitext(args.figure)[1].lower() not in FIGURE_EXTENSIONS:
        parser.error(f"--figure {args.figure}: the file name must end in .png, .svg or .pdf")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+")
    parser.add_argument("--name")
    parser.add_argument("--bytes", type=int)
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--figure")
    parser.add_argument("--ops", type=int, default=3)
    parser.add_argument("--xmax", type=float)
    parser.add_argument("--title")
    args = parser.parse_args()
    check_arguments(parser, args)
    try:
        traces = [read_trace(path) for path in args.files]
        name, size = args.name, args.bytes
        if name is None or size is None:
            first = largest(traces[0][1], name, size)
            if first is None:
                raise Malformed(f"{args.files[0]}: no finished operation of that name or size")
            name, size = first
        ranks = {}
        for path, (rank, ops) in zip(args.files, traces):
            if rank in ranks:
                raise Malformed(f"{path}: a second file of rank {rank}: give the files of one communicator")
            ranks[rank] = select(ops, name, size, args.skip)
        rows = [summarize(rank, chosen) for rank, chosen in sorted(ranks.items()) if chosen]
        if not rows:
            raise Malformed(f"no {name} of {size} bytes in the files (after skipping {args.skip})")
        print_table(rows, name, size)
        if args.figure:
            title = args.title or f"{name}, {size} bytes per rank: {args.ops} operations"
            try:
                draw(args.figure, ranks, args.ops, title, args.xmax)
            except ValueError as error:
                # What matplotlib refuses while drawing, such as a --title
                # whose $...$ is not valid math text.
                # Its messages can span lines (math text points at the bad
                # character): kept to one.
                reason = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
                raise Malformed(f"{args.figure}: the figure could not be drawn: {reason}")
    except (Malformed, OSError) as error:
        print(f"trace_summary.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
