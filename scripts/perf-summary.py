#!/usr/bin/env python3
"""One table from logs in nccl-tests' format (hora-perf's and nccl-tests'
own *_perf programs print the same one).

    perf-summary.py LABEL=LOG [LABEL=LOG ...]

For each log: the out-of-place time of the smallest size, the out-of-place
and in-place busbw of the largest, and the "Out of bounds values" verdict
(as nccl-tests counts it: the checks, per size and place, in which a
thread found a wrong element). A log without a table (the
program failed) shows as such.
"""
import sys


def rows(path):
    table, verdict = [], None
    with open(path, errors="replace") as log:
        for line in log:
            fields = line.split()
            if line.startswith("# Out of bounds values"):
                verdict = line.split(":", 1)[1].strip()
            elif len(fields) >= 13 and not line.startswith("#") and fields[0].isdigit():
                table.append(fields)
    return table, verdict


def main(arguments):
    print(f"{'run':44} {'smallest':>9} {'time us':>9} {'largest':>10} {'busbw oop':>10} {'busbw ip':>9}  wrong")
    for argument in arguments:
        label, _, path = argument.partition("=")
        try:
            table, verdict = rows(path)
        except OSError:
            table, verdict = [], None
        if not table:
            print(f"{label:44} no results (see {path})")
            continue
        first, last = table[0], table[-1]
        # size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
        print(f"{label:44} {first[0]:>9} {first[5]:>9} {last[0]:>10} {last[7]:>10} {last[11]:>9}  "
              f"{verdict or 'no verdict'}")


if __name__ == "__main__":
    main(sys.argv[1:])
