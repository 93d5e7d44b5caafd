"""Checks how the comparison scripts of bench/compare end: after the whole
report, exit_with_verdict (common.sh) exits with 1 and one line saying how
many runs failed and how many wrong elements were reported, or with 0 when
all is well; and every script ends with it, so none can report a failed
run and still exit 0. The scripts themselves are not run (they are
benchmarks of minutes): the helpers are sourced and called as they call them.

    check_compare_verdict.py COMMON_SH SCRIPT...
"""

import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_plots import fail  # noqa: E402

# A result table as hora-perf prints it: #wrong in columns 9 and 13.
TABLE = """#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    100.0   10.49   10.49       {0}    100.0   10.49   10.49       {1}
"""


def bash(common_sh, script, *args):
    """Runs `script` in bash with common.sh sourced; the verdict's exit ends it."""
    return subprocess.run(["bash", "-c", f'set -euo pipefail; source "$0"; {script}', common_sh, *args],
                          capture_output=True, text=True, timeout=30)


def check_verdicts(common_sh):
    cases = [
        # (wrong elements, failed runs, exit status, the line expected or None)
        ("0", [], 0, None),
        ("n/a", [], 0, None),
        ("0", ["hora-big-r1"], 1, "# FAILED: 1 run(s) failed or timed out, 0 wrong element(s) reported"),
        ("0", ["a-r1", "b-r2"], 1, "# FAILED: 2 run(s) failed or timed out, 0 wrong element(s) reported"),
        ("7", [], 1, "# FAILED: 0 run(s) failed or timed out, 7 wrong element(s) reported"),
        ("n/a", ["x"], 1, "# FAILED: 1 run(s) failed or timed out, 0 wrong element(s) reported"),
    ]
    for wrong, failed, status, line in cases:
        result = bash(common_sh, 'exit_with_verdict "$@"; echo "not reached"', wrong, *failed)
        what = f"wrong={wrong} failed={failed}"
        if result.returncode != status:
            fail(f"{what}: exit status {result.returncode}, {status} expected:\n{result.stdout}{result.stderr}")
        if "not reached" in result.stdout:
            fail(f"{what}: exit_with_verdict returned instead of ending the script")
        expected = f"{line}\n" if line else ""
        if result.stdout != expected:
            fail(f"{what}: printed {result.stdout!r}, {expected!r} expected")
    print(f"{len(cases)} verdicts right")


def check_wrong_elements_reach_the_verdict(common_sh):
    """wrong_in's count of a table's #wrong columns decides the status, and a
    pattern that matched no file does not stop a set -e script."""
    with tempfile.TemporaryDirectory() as folder:
        good, bad = os.path.join(folder, "good.txt"), os.path.join(folder, "bad.txt")
        with open(good, "w") as f:
            f.write(TABLE.format(0, 0))
        with open(bad, "w") as f:
            f.write(TABLE.format(2, 3))
        script = 'wrong=$(wrong_in "$@"); echo "counted $wrong"; exit_with_verdict "$wrong"'
        for files, status, counted in (([good], 0, "0"), ([good, bad], 1, "5"),
                                       ([os.path.join(folder, "none-*.txt")], 0, "n/a")):
            result = bash(common_sh, script, *files)
            if result.returncode != status or not result.stdout.startswith(f"counted {counted}\n"):
                fail(f"tables {[os.path.basename(f) for f in files]}: status {result.returncode} "
                     f"({status} expected), output:\n{result.stdout}{result.stderr}")
    print("wrong elements counted in tables decide the exit status")


def check_scripts_end_with_the_verdict(scripts):
    for script in scripts:
        with open(script, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if line.strip() and not line.startswith("#")]
        if not lines or not lines[-1].startswith("exit_with_verdict "):
            fail(f"{script}: its last command is {lines[-1] if lines else 'nothing'!r}, "
                 "not exit_with_verdict: a failed run would still exit 0")
        if '"${failed[@]}"' not in lines[-1]:
            fail(f"{script}: exit_with_verdict is not given the failed runs: {lines[-1]}")
    print(f"{len(scripts)} comparison scripts end with the verdict")


def main():
    if len(sys.argv) < 3:
        fail("usage: check_compare_verdict.py COMMON_SH SCRIPT...")
    common_sh, scripts = sys.argv[1], sys.argv[2:]
    check_verdicts(common_sh)
    check_wrong_elements_reach_the_verdict(common_sh)
    check_scripts_end_with_the_verdict(scripts)


if __name__ == "__main__":
    main()
