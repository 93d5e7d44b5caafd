"""Checks the step trace end to end: two ranks started by hora-run, each a
process running hora-perf with HORA_TRACE set, write one trace file each;
tools/trace/trace_summary.py reads them, picks the largest all-reduce (not
hora-perf's small barrier calls), and draws a figure; files that are not traces are refused,
and so are numbers out of range and figure formats it cannot write.

    check_trace.py SUMMARY_PY HORA_RUN HORA_PERF

trace_summary.py runs under the interpreter that runs this script, which
must have matplotlib (scripts/setup.sh installs python3-matplotlib).
"""

import glob
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_plots import check_png, check_svg, fail, require_matplotlib  # noqa: E402

SIZE = 1 << 20


def summarize(summary_py, *args):
    return subprocess.run([sys.executable, summary_py, *args], capture_output=True, text=True, timeout=60)


def check_job(summary_py, hora_run, hora_perf, folder):
    env = dict(os.environ, HORA_TRACE=os.path.join(folder, "job"), HORA_TRANSPORT="shm")
    job = subprocess.run([hora_run, "-n", "2", hora_perf, "all_reduce", "-b", str(SIZE), "-e", str(SIZE),
                          "-w", "1", "-n", "4"], env=env, capture_output=True, text=True, timeout=120)
    if job.returncode != 0:
        fail(f"hora-run exited with {job.returncode}:\n{job.stdout}\n{job.stderr}")
    files = sorted(glob.glob(os.path.join(folder, "job.rank*.tsv")))
    names = [os.path.basename(f).split(".")[1] for f in files]
    if names != ["rank0", "rank1"]:
        fail(f"expected one trace per rank, found {[os.path.basename(f) for f in files]}")
    for extension, check in (("png", check_png), ("svg", check_svg)):
        figure = os.path.join(folder, f"timeline.{extension}")
        result = summarize(summary_py, *files, "--skip", "1", "--figure", figure, "--ops", "2")
        if result.returncode != 0:
            fail(f"trace_summary.py exited with {result.returncode}:\n{result.stderr}")
        lines = result.stdout.splitlines()
        if not lines or lines[0] != f"AllReduce of {SIZE} bytes per rank: share of each rank's operation time":
            fail(f"the operation chosen is not the {SIZE}-byte all-reduce:\n{result.stdout}")
        rows = [line.split("\t") for line in lines[2:]]
        if [row[0] for row in rows] != ["0", "1"]:
            fail(f"expected a row for each rank:\n{result.stdout}")
        for row in rows:
            # hora-perf times 4 out of place and 4 in place (and runs
            # warm-up and checking calls besides): one is skipped.
            if int(row[1]) < 7:
                fail(f"rank {row[0]}: {row[1]} all-reduces of {SIZE} bytes, at least 7 expected:\n"
                     f"{result.stdout}")
            work = float(row[5].rstrip("%"))
            if not 0.0 <= work <= 100.0:
                fail(f"rank {row[0]}: own work {row[5]}")
        check(figure)
    print("2 traces written by hora-run's ranks; summary and figure (PNG, SVG) made")


def check_refusals(summary_py, folder):
    cases = {
        "no title": "start_ns\tduration_ns\trecord\twhat\top\tbytes\tpolls\tyields\tsleeps\n",
        "bad header": "# hora step trace: rank 0 of 2\nstart duration\n",
        "short row": "# hora step trace: rank 0 of 2\n"
                     "start_ns\tduration_ns\trecord\twhat\top\tbytes\tpolls\tyields\tsleeps\n1\t2\top\n",
        "bad record": "# hora step trace: rank 0 of 2\n"
                      "start_ns\tduration_ns\trecord\twhat\top\tbytes\tpolls\tyields\tsleeps\n"
                      "1\t2\tstep\tAllReduce\t1\t8\t0\t0\t0\n",
        "not text": b"\x89PNG\r\n\x1a\n\xff\xfe",
    }
    for name, text in cases.items():
        path = os.path.join(folder, name.replace(" ", "_") + ".tsv")
        with open(path, "wb") as f:
            f.write(text if isinstance(text, bytes) else text.encode())
        result = summarize(summary_py, path)
        if result.returncode == 0:
            fail(f"{name}: accepted")
        if path not in result.stderr or "Traceback" in result.stderr:
            fail(f"{name}: the refusal does not name the file, or is a traceback:\n{result.stderr}")
    print(f"{len(cases)} files that are not traces refused")


def check_duplicate_rank(summary_py, folder):
    rank0 = sorted(glob.glob(os.path.join(folder, "job.rank0.*.tsv")))[0]
    copy = os.path.join(folder, "copy.tsv")
    with open(rank0) as source, open(copy, "w") as target:
        target.write(source.read())
    result = summarize(summary_py, rank0, copy)
    if result.returncode == 0 or "a second file of rank 0" not in result.stderr:
        fail(f"two files of rank 0 were not refused:\n{result.stdout}{result.stderr}")
    print("two files of one rank refused")


def check_bad_arguments(summary_py, folder):
    """Numbers out of range and figure formats matplotlib cannot write are
    refused up front (exit status 2, naming the flag, before any table),
    never a traceback; a title matplotlib cannot draw fails cleanly."""
    rank0 = sorted(glob.glob(os.path.join(folder, "job.rank0.*.tsv")))[0]
    figure = os.path.join(folder, "refused.png")
    cases = [
        (["--ops", "0", "--figure", figure], "--ops"),
        (["--ops", "-2"], "--ops"),
        (["--skip", "-1"], "--skip"),
        (["--bytes", "-8"], "--bytes"),
        (["--xmax", "0", "--figure", figure], "--xmax"),
        (["--xmax", "-1.5", "--figure", figure], "--xmax"),
        (["--xmax", "nan", "--figure", figure], "--xmax"),
        (["--xmax", "inf", "--figure", figure], "--xmax"),
        (["--figure", os.path.join(folder, "f.xyz")], "f.xyz"),
        (["--figure", os.path.join(folder, "timeline")], "must end in .png, .svg or .pdf"),
    ]
    for arguments, named in cases:
        result = summarize(summary_py, rank0, *arguments)
        what = " ".join(arguments)
        if result.returncode != 2:
            fail(f"{what}: exit status {result.returncode}, 2 expected:\n{result.stdout}{result.stderr}")
        if "Traceback" in result.stderr or named not in result.stderr:
            fail(f"{what}: the refusal does not name {named}, or is a traceback:\n{result.stderr}")
        if result.stdout:
            fail(f"{what}: a summary was printed before the refusal:\n{result.stdout}")
        if os.path.exists(figure):
            fail(f"{what}: a figure was drawn")
    title = summarize(summary_py, rank0, "--figure", figure, "--title", "$\\frac{$")
    lines = title.stderr.strip().splitlines()
    if title.returncode != 1 or "Traceback" in title.stderr or len(lines) != 1 or figure not in lines[0]:
        fail(f"a title matplotlib cannot draw: exit status {title.returncode}, 1 and one line naming the "
             f"figure expected:\n{title.stderr}")
    print(f"{len(cases) + 1} bad command lines refused")


def main():
    summary_py, hora_run, hora_perf = sys.argv[1:4]
    require_matplotlib()
    with tempfile.TemporaryDirectory() as folder:
        check_job(summary_py, hora_run, hora_perf, folder)
        check_refusals(summary_py, folder)
        check_duplicate_rank(summary_py, folder)
        check_bad_arguments(summary_py, folder)


if __name__ == "__main__":
    main()
