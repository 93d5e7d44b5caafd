#!/usr/bin/python3
"""Draws the figures of a comparison's summary.tsv (compare_shm.sh,
compare_tcp.sh): per collective, bus bandwidth against size and, where the
file has latency rows, time against size; each tool's median as a line, the
range of its launches as a shaded band, and the machine's limits as dashed
horizontal lines. Every figure is written as PNG and SVG.

    plot.py SUMMARY.tsv OUTDIR [--title T]

writes into OUTDIR, for every collective C in the file:
    C_busbw.png, C_busbw.svg        when C has busbw_GBps rows
    C_latency.png, C_latency.svg    when C has time_us rows
and headline.png, headline.svg: the all_reduce bandwidth figure, larger
(when the file has all_reduce busbw rows). A malformed file is refused,
with the line and what is wrong with it, before anything is drawn.

The summary.tsv format
----------------------
Text, tab-separated, one header line then one row per figure:

    kind  tool  collective  size_bytes  metric  median  min  max  n

kind        result: what a library achieved; limit: what the machine can
            carry without any library (a reference line).
tool        result: who ran it (hora, hora-win for hora on registered
            windows, mpi, mpi-shm, gloo-<algorithm>, ...);
            limit: the limit's name (memcpy-1-thread, memcpy-2-threads,
            add-2-threads, tcp-one-direction, tcp-both-directions,
            core-to-core-copy, core-to-core-latency, ...).
            No spaces, and no '$' (matplotlib would read math text).
collective  result: the collective (all_reduce, all_gather, ...): letters,
            digits, '_' and '-' only, as it names the figure's files;
            limit: -
size_bytes  result: the message size in bytes, as in the size column of
            nccl-tests' tables (a whole integer from 1 to 2^63 - 1, written
            in ASCII digits); limit: -
metric      result: busbw_GBps (bus bandwidth, nccl-tests' definition, GB/s
            with 1 GB = 10^9 bytes) or time_us (the time of one operation in
            microseconds, for the latency sizes);
            limit: GBps (bytes per second / 10^9, drawn on the bandwidth
            figures) or ns (nanoseconds, drawn on the latency figures).
median, min, max
            over n separate launches: of a result, the figure of each launch
            of the tool at that size (the scripts use the in-place column:
            every library has one); of a limit, the figure of each run of
            the program that measures it. Non-negative numbers, at most
            10^15, with min <= median <= max.
n           how many launches or runs gave a figure (a whole integer from 1
            to 2^63 - 1, in ASCII digits).

A (kind, tool, collective, size_bytes, metric) appears at most once.
"""

import argparse
import importlib.util
import math
import os
import re
import sys

HEADER = ["kind", "tool", "collective", "size_bytes", "metric", "median", "min", "max", "n"]
RESULT_METRICS = {"busbw_GBps", "time_us"}
LIMIT_METRICS = {"GBps", "ns"}
# Whole numbers fit a signed 64-bit integer, as every size and count a C
# program of the comparisons prints does; beyond that matplotlib's axis
# arithmetic fails deep inside instead of the file being refused.
WHOLE_LIMIT = 2**63
# Far above any bandwidth (GB/s) or time (us, ns) a run reports, and far
# below where the axis limits (a margin above the highest figure) overflow.
NUMBER_LIMIT = 1e15
# A collective names its figures' files: a plain identifier, so that no
# name (with '/' or '..') can reach outside OUTDIR.
COLLECTIVE_NAME = re.compile(r"[A-Za-z0-9_-]+")
WHOLE_NUMBER = re.compile(r"[0-9]+")


class Malformed(Exception):
    """The summary file is not in the format above."""


class Row:
    """One row of the summary, its numbers parsed."""

    def __init__(self, kind, tool, collective, size, metric, median, low, high, count):
        self.kind = kind
        self.tool = tool
        self.collective = collective
        self.size = size
        self.metric = metric
        self.median = median
        self.low = low
        self.high = high
        self.count = count


def parse_number(text, what):
    try:
        value = float(text)
    except ValueError:
        raise Malformed(f"{what} '{text}' is not a number") from None
    if not math.isfinite(value) or value < 0 or value > NUMBER_LIMIT:
        raise Malformed(f"{what} '{text}' is not a number from 0 to {NUMBER_LIMIT:g}")
    return value


def parse_whole(text, what, least):
    # fullmatch of ASCII digits: str.isdigit() also accepts digits such as
    # '²', which int() then refuses.
    if not WHOLE_NUMBER.fullmatch(text) or not least <= int(text) < WHOLE_LIMIT:
        raise Malformed(f"{what} '{text}' is not a whole number from {least} to 2^63 - 1")
    return int(text)


def parse_row(fields):
    if len(fields) != len(HEADER):
        raise Malformed(f"{len(fields)} tab-separated fields, expected {len(HEADER)}")
    kind, tool, collective, size, metric = fields[:5]
    if not tool or tool == "-" or any(c.isspace() for c in tool):
        raise Malformed(f"tool '{tool}' is empty or has spaces")
    if "$" in tool:
        raise Malformed(f"tool '{tool}' has a '$', which would be drawn as math text")
    if kind == "result":
        if not collective or collective == "-":
            raise Malformed("a result row needs a collective")
        if not COLLECTIVE_NAME.fullmatch(collective):
            raise Malformed(f"collective '{collective}' is not a plain name (letters, digits, '_' and '-'): "
                            "it names the figure files")
        size = parse_whole(size, "size_bytes", 1)
        if metric not in RESULT_METRICS:
            raise Malformed(f"metric '{metric}' of a result is not one of {sorted(RESULT_METRICS)}")
    elif kind == "limit":
        if collective != "-" or size != "-":
            raise Malformed("a limit row has '-' as collective and size_bytes")
        size = None
        if metric not in LIMIT_METRICS:
            raise Malformed(f"metric '{metric}' of a limit is not one of {sorted(LIMIT_METRICS)}")
    else:
        raise Malformed(f"kind '{kind}' is neither result nor limit")
    median, low, high = (parse_number(fields[i], HEADER[i]) for i in (5, 6, 7))
    if not low <= median <= high:
        raise Malformed(f"min {low} <= median {median} <= max {high} does not hold")
    count = parse_whole(fields[8], "n", 1)
    return Row(kind, tool, collective, size, metric, median, low, high, count)


def read_summary(path):
    """The rows of a summary file; raises Malformed (with the line) when it is not one."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise Malformed(f"cannot read it: {error}") from None
    if not lines:
        raise Malformed("the file is empty; expected the header line " + "\\t".join(HEADER))
    if lines[0].split("\t") != HEADER:
        raise Malformed("line 1: expected the header " + "\\t".join(HEADER))
    rows, seen = [], set()
    for number, line in enumerate(lines[1:], start=2):
        try:
            row = parse_row(line.split("\t"))
        except Malformed as error:
            raise Malformed(f"line {number}: {error}") from None
        key = (row.kind, row.tool, row.collective, row.size, row.metric)
        if key in seen:
            raise Malformed(f"line {number}: a second row for {row.kind} {row.tool} "
                            f"{row.collective} {row.size} {row.metric}")
        seen.add(key)
        rows.append(row)
    if not any(row.kind == "result" for row in rows):
        raise Malformed("no result rows: nothing to draw")
    return rows


def byte_label(size):
    """8 -> 8B, 65536 -> 64K, 268435456 -> 256M."""
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift}{unit}"
    return f"{size:g}B"


def in_order(items):
    """The distinct items, in the order they first appear."""
    return list(dict.fromkeys(items))


class Plotter:
    """Draws figures with one colour per tool, the same in every figure."""

    def __init__(self, rows, outdir, title):
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        # Reproducible SVG files: fixed element ids and no date inside.
        matplotlib.rcParams["svg.hashsalt"] = "hora"
        import matplotlib.pyplot as pyplot
        from matplotlib import ticker, transforms

        self.pyplot, self.ticker, self.transforms = pyplot, ticker, transforms
        self.rows, self.outdir, self.title = rows, outdir, title
        tools = in_order(row.tool for row in rows if row.kind == "result")
        palette = pyplot.get_cmap("tab10").colors
        self.colours = {tool: palette[i % len(palette)] for i, tool in enumerate(tools)}
        self.written = []

    def results(self, collective, metric):
        """{tool: [rows by size]} of one collective and metric."""
        chosen = [r for r in self.rows
                  if r.kind == "result" and r.collective == collective and r.metric == metric]
        by_tool = {}
        for row in chosen:
            by_tool.setdefault(row.tool, []).append(row)
        return {tool: sorted(rows, key=lambda r: r.size) for tool, rows in by_tool.items()}

    def limits(self, metric):
        return [r for r in self.rows if r.kind == "limit" and r.metric == metric]

    def size_axis(self, axes, sizes):
        """A log2 axis with a tick at every power of two of the range, labelled in bytes."""
        low = math.floor(math.log2(min(sizes)))
        high = math.ceil(math.log2(max(sizes)))
        if low == high:  # one size: room on both sides
            low, high = low - 1, high + 1
        axes.set_xscale("log", base=2)
        axes.set_xlim(2 ** (low - 0.3), 2 ** (high + 0.3))
        ticks = [2 ** e for e in range(low, high + 1)]
        axes.xaxis.set_major_locator(self.ticker.FixedLocator(ticks))
        axes.xaxis.set_major_formatter(self.ticker.FixedFormatter([byte_label(t) for t in ticks]))
        axes.xaxis.set_minor_locator(self.ticker.NullLocator())
        if len(ticks) > 12:  # 8B..256M is 26 labels: turned, they fit
            axes.tick_params(axis="x", labelrotation=45, labelsize=8)
        axes.set_xlabel("message size (bytes)")

    def draw(self, name, collective, metric, headline=False):
        by_tool = self.results(collective, metric)
        latency = metric == "time_us"
        # Limits: GB/s ones on bandwidth figures, ns ones (as us) on latency figures.
        scale = 1e-3 if latency else 1.0
        limits = self.limits("ns" if latency else "GBps")
        figure, axes = self.pyplot.subplots(figsize=(10, 6.5) if headline else (8, 5))
        sizes, tops, counts = [], [], []
        for tool, rows in by_tool.items():
            x = [r.size for r in rows]
            colour = self.colours[tool]
            axes.fill_between(x, [r.low for r in rows], [r.high for r in rows],
                              color=colour, alpha=0.2, linewidth=0)
            if len(rows) == 1:  # a band needs two sizes; one gets a bar instead
                axes.errorbar(x, [rows[0].median], yerr=[[rows[0].median - rows[0].low],
                                                         [rows[0].high - rows[0].median]],
                              color=colour, alpha=0.5, capsize=4, linestyle="none")
            axes.plot(x, [r.median for r in rows], color=colour, marker="o", markersize=3,
                      label=tool)
            sizes += x
            tops += [r.high for r in rows]
            counts += [r.count for r in rows]
        # Each limit: a dashed line at its median, labelled with its name,
        # median and range; labels of neighbouring lines alternate between
        # the left and the right end so that close lines stay readable.
        across = self.transforms.blended_transform_factory(axes.transAxes, axes.transData)
        unit = "µs" if latency else "GB/s"
        for index, limit in enumerate(sorted(limits, key=lambda l: l.median)):
            value = limit.median * scale
            axes.axhline(value, color="0.35", linestyle="--", linewidth=1)
            left = index % 2 == 1
            axes.text(0.01 if left else 0.99, value, f"{limit.tool} {value:.3g} {unit} "
                      f"(range {limit.low * scale:.3g}-{limit.high * scale:.3g})",
                      transform=across, ha="left" if left else "right", va="bottom", fontsize=8,
                      color="0.25")
            tops.append(value)
        self.size_axis(axes, sizes)
        if latency:
            # Times span decades; ticks at 1, 2 and 5 of each, in plain numbers.
            axes.set_yscale("log")
            axes.yaxis.set_major_locator(self.ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axes.yaxis.set_major_formatter(self.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            axes.yaxis.set_minor_formatter(self.ticker.NullFormatter())
            axes.set_ylabel("time per operation (µs)")
            what = "latency"
        else:
            axes.set_ylim(0, max(tops) * 1.08 if max(tops) > 0 else 1)
            axes.set_ylabel("bus bandwidth (GB/s)")
            what = "bus bandwidth"
        axes.set_title(f"{collective}: {what}")
        if self.title:
            figure.suptitle(self.title, fontsize=10)
        launches = (f"{min(counts)}" if min(counts) == max(counts)
                    else f"{min(counts)}-{max(counts)}")
        # Outside the axes, where no line or label runs under it.
        axes.legend(title=f"median; band:\nmin-max of {launches}\nlaunches", fontsize=8,
                    title_fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        axes.grid(True, which="major", alpha=0.3)
        figure.tight_layout()
        for extension in ("png", "svg"):
            path = os.path.join(self.outdir, f"{name}.{extension}")
            figure.savefig(path, dpi=120, metadata={"Date": None} if extension == "svg" else None)
            self.written.append(path)
        self.pyplot.close(figure)

    def draw_all(self):
        collectives = in_order(r.collective for r in self.rows if r.kind == "result")
        for collective in collectives:
            if self.results(collective, "busbw_GBps"):
                self.draw(f"{collective}_busbw", collective, "busbw_GBps")
            if self.results(collective, "time_us"):
                self.draw(f"{collective}_latency", collective, "time_us")
        if self.results("all_reduce", "busbw_GBps"):
            self.draw("headline", "all_reduce", "busbw_GBps", headline=True)
        else:
            print("plot.py: no all_reduce busbw rows, so no headline figure", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(
        description="Draws the figures of a comparison's summary.tsv (format: this file's header).")
    parser.add_argument("summary", help="the summary.tsv of compare_shm.sh or compare_tcp.sh")
    parser.add_argument("outdir", help="the folder for the PNG and SVG files (created if missing)")
    parser.add_argument("--title", default="", help="a title above every figure")
    args = parser.parse_args()

    try:
        rows = read_summary(args.summary)
    except Malformed as error:
        print(f"plot.py: {args.summary} is not a valid summary: {error}", file=sys.stderr)
        return 1
    if importlib.util.find_spec("matplotlib") is None:
        print(f"plot.py: matplotlib is not installed for {sys.executable}; on Debian: "
              "apt-get install python3-matplotlib", file=sys.stderr)
        return 1
    plotter = Plotter(rows, args.outdir, args.title)
    try:
        os.makedirs(args.outdir, exist_ok=True)
        plotter.draw_all()
    except OSError as error:
        print(f"plot.py: cannot write the figures into {args.outdir}: {error}", file=sys.stderr)
        return 1
    except ValueError as error:
        # What matplotlib refuses while drawing, such as a --title whose
        # $...$ is not valid math text; its messages can span lines.
        reason = " ".join(part.strip() for part in str(error).splitlines() if part.strip())
        print(f"plot.py: cannot draw the figures of {args.summary}: {reason}", file=sys.stderr)
        return 1
    for path in plotter.written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
