"""Checks bench/compare/plot.py, the figure maker of the comparison scripts.

    check_plots.py figures PLOT_PY SUMMARY NAME...
        draws SUMMARY into a temporary folder and checks that NAME.png and
        NAME.svg exist for every NAME and are images: a PNG signature and an
        IHDR chunk with a width and height above 0; an SVG file that parses
        as XML with an svg root element.
    check_plots.py malformed PLOT_PY SUMMARY
        writes broken variants of SUMMARY (each breaking one rule of the
        format) and checks that plot.py refuses every one: a non-zero exit,
        a message that names the file, no Python traceback, no figure.

plot.py runs under the interpreter that runs this script. matplotlib must
be importable there (scripts/setup.sh installs python3-matplotlib): if it is
not, both checks fail rather than skip, so a machine without it is noticed.
"""

import importlib.util
import os
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def require_matplotlib():
    if importlib.util.find_spec("matplotlib") is None:
        fail(f"matplotlib is not installed for {sys.executable}; scripts/setup.sh installs it "
             "(Debian: apt-get install python3-matplotlib)")


def plot(plot_py, summary, outdir):
    return subprocess.run([sys.executable, plot_py, summary, outdir, "--title", "check"],
                          capture_output=True, text=True, timeout=60)


def check_png(path):
    with open(path, "rb") as file:
        head = file.read(24)
    if head[:8] != PNG_SIGNATURE:
        fail(f"{path}: no PNG signature")
    length, kind, width, height = struct.unpack(">I4sII", head[8:24])
    if kind != b"IHDR" or length != 13:
        fail(f"{path}: the first chunk is not a 13-byte IHDR")
    if width == 0 or height == 0:
        fail(f"{path}: IHDR says {width} x {height}")


def check_svg(path):
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as error:
        fail(f"{path}: not XML: {error}")
    if root.tag.rsplit("}", 1)[-1] != "svg":
        fail(f"{path}: the root element is {root.tag}, not svg")


def check_figures(plot_py, summary, names):
    with tempfile.TemporaryDirectory() as outdir:
        result = plot(plot_py, summary, outdir)
        if result.returncode != 0:
            fail(f"plot.py exited with {result.returncode}:\n{result.stderr}")
        for name in names:
            for extension, check in (("png", check_png), ("svg", check_svg)):
                path = os.path.join(outdir, f"{name}.{extension}")
                if not os.path.isfile(path):
                    fail(f"plot.py did not write {name}.{extension}; it wrote: "
                         f"{' '.join(sorted(os.listdir(outdir)))}")
                check(path)
        print(f"{len(names)} figures, PNG and SVG, drawn and valid")


def broken_variants(lines):
    """(what is broken, the file's text) for one broken rule each."""
    header, rows = lines[0], lines[1:]
    result = next(r for r in rows if r.startswith("result\t"))
    limit = next(r for r in rows if r.startswith("limit\t"))

    def with_field(row, index, value):
        fields = row.split("\t")
        fields[index] = value
        return "\t".join(fields)

    def text(*chosen):
        return "".join(line + "\n" for line in chosen)

    return [
        ("an empty file", ""),
        ("no header", text(*rows)),
        ("a misspelt header", text(header.replace("median", "mean"), *rows)),
        ("only the header", text(header)),
        ("a row of 8 fields", text(header, result.rsplit("\t", 1)[0])),
        ("spaces instead of tabs", text(header, result.replace("\t", " "))),
        ("an unknown kind", text(header, with_field(result, 0, "measurement"))),
        ("a median that is no number", text(header, with_field(result, 5, "fast"))),
        ("a negative figure", text(header, with_field(result, 6, "-1"))),
        ("min above the median", text(header, with_field(result, 6, "1e9"))),
        ("a size that is no whole number", text(header, with_field(result, 3, "16M"))),
        ("an unknown result metric", text(header, with_field(result, 4, "algbw_GBps"))),
        ("n of 0", text(header, with_field(result, 8, "0"))),
        ("n of a superscript two", text(header, with_field(result, 8, "\u00b2"))),
        ("a size in full-width digits", text(header, with_field(result, 3, "\uff11\uff16"))),
        ("a size of 10^400", text(header, with_field(result, 3, "1" + "0" * 400))),
        ("a size of 2^63", text(header, with_field(result, 3, str(2**63)))),
        ("an n of 2^63", text(header, with_field(result, 8, str(2**63)))),
        ("a median of 10^300", text(header, with_field(result, 5, "1e300"))),
        ("a collective with a slash", text(header, with_field(result, 2, "../escape"))),
        ("a collective of '..'", text(header, with_field(result, 2, ".."))),
        ("a collective with a space", text(header, with_field(result, 2, "all reduce"))),
        ("a tool with math text", text(header, with_field(result, 1, "$\\frac{$"))),
        ("a limit with a collective", text(header, result, with_field(limit, 2, "all_reduce"))),
        ("an unknown limit metric", text(header, result, with_field(limit, 4, "busbw_GBps"))),
        ("a row twice", text(header, result, result)),
        ("a blank line", text(header, "", result)),
    ]


def check_malformed(plot_py, summary):
    with open(summary, encoding="utf-8") as file:
        lines = file.read().splitlines()
    with tempfile.TemporaryDirectory() as folder:
        variants = broken_variants(lines)
        for number, (what, text) in enumerate(variants):
            path = os.path.join(folder, f"broken-{number}.tsv")
            outdir = os.path.join(folder, f"figures-{number}")
            with open(path, "w", encoding="utf-8") as file:
                file.write(text)
            result = plot(plot_py, path, outdir)
            if result.returncode == 0:
                fail(f"plot.py accepted a file with {what}")
            if "Traceback" in result.stderr or path not in result.stderr:
                fail(f"plot.py's message for a file with {what} is not a clear one:\n{result.stderr}")
            if os.path.exists(outdir) and os.listdir(outdir):
                fail(f"plot.py drew figures from a file with {what}")
        # Nothing beside the summaries and their (empty) figure folders: a
        # collective such as '../escape' wrote no file outside OUTDIR.
        strays = [name for name in os.listdir(folder)
                  if not (name.startswith("broken-") or name.startswith("figures-"))]
        if strays:
            fail(f"plot.py wrote outside its OUTDIR: {' '.join(sorted(strays))}")
        print(f"{len(variants)} malformed files refused")


def check_bad_title(plot_py, summary):
    """A title matplotlib cannot draw (bad math text) fails with one line, no traceback."""
    with tempfile.TemporaryDirectory() as outdir:
        result = subprocess.run([sys.executable, plot_py, summary, outdir, "--title", "$\\frac{$"],
                                capture_output=True, text=True, timeout=60)
        lines = result.stderr.strip().splitlines()
        if result.returncode != 1 or "Traceback" in result.stderr or len(lines) != 1:
            fail(f"a title of bad math text: exit status {result.returncode}, 1 and one line expected:\n"
                 f"{result.stderr}")
    print("a title matplotlib cannot draw refused")


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("figures", "malformed"):
        fail("usage: check_plots.py figures PLOT_PY SUMMARY NAME... | malformed PLOT_PY SUMMARY")
    require_matplotlib()
    mode, plot_py, summary, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    if mode == "figures":
        if not names:
            fail("name at least one figure to expect")
        check_figures(plot_py, summary, names)
    else:
        check_malformed(plot_py, summary)
        check_bad_title(plot_py, summary)


if __name__ == "__main__":
    main()
