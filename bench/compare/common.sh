# Helpers shared by the comparison scripts of this folder (compare_tcp.sh,
# compare_shm.sh, compare_ofi.sh, compare_builds.sh). Sourced, not run: each function takes
# what it works on as arguments, so the scripts keep their own settings and
# result folders.
# shellcheck shell=bash

# The repository, and this folder with the peer programs' sources.
# shellcheck disable=SC2034  # used by the scripts that source this file
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC2034
src="$repo/bench/compare"

# Progress and errors go to stderr; stdout carries the report alone.
note() { printf '%s\n' "$*" >&2; }

# require_packages <what:package>...
# Each <what> is a command to find on PATH, an absolute path of a file that
# must exist (a header, say), or "deb" for the package itself to be
# installed (where neither tells: mpicxx is on PATH once openmpi-bin is,
# but mpi.h comes with libopenmpi-dev, in an architecture's own folder);
# <package> is the Debian package that provides it. Installs the missing
# packages when running as root with apt-get, otherwise says what to
# install and exits.
require_packages() {
  local pair what missing=()
  for pair in "$@"; do
    what=${pair%%:*}
    if [[ $what == deb ]]; then
      dpkg-query -W -f='${Status}' "${pair#*:}" 2>/dev/null | grep -q "ok installed" || missing+=("${pair#*:}")
    elif [[ $what == /* ]]; then
      [[ -f $what ]] || missing+=("${pair#*:}")
    else
      command -v "$what" >/dev/null || missing+=("${pair#*:}")
    fi
  done
  ((${#missing[@]})) || return 0
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    note "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    note "missing packages: ${missing[*]}"
    note "install them first, e.g.: sudo apt-get install ${missing[*]}"
    exit 1
  fi
}

# build_program <binary> <source> <compiler> [flags and libraries...]
# Compiles one single-file program as C++17, only when the binary is missing
# or older than its source or than bench_table.h beside it (the header the
# peer programs share). Flags come after the source, so libraries link.
build_program() {
  local binary=$1 source=$2 compiler=$3
  shift 3
  if [[ ! -x $binary || $source -nt $binary || $(dirname "$source")/bench_table.h -nt $binary ]]; then
    note "building $binary"
    "$compiler" -std=c++17 -o "$binary" "$source" "$@"
  fi
}

# run_step <timeout seconds> <results folder> <name> <command...>
# Runs one command, its stdout kept in <results>/<name>.txt and its stderr
# in <name>.err, and says how long it took. A run that fails or outlives
# the timeout shows its errors and returns 1; what it printed stays in
# <name>.txt, for the caller to keep or discard.
run_step() {
  local limit=$1 results=$2 name=$3
  shift 3
  note "== $name: $*"
  local step_start=$SECONDS status=0
  if ! timeout "$limit" "$@" >"$results/$name.txt" 2>"$results/$name.err"; then
    note "   $name failed or timed out; its errors:"
    sed 's/^/   /' "$results/$name.err" >&2
    status=1
  fi
  note "   $((SECONDS - step_start)) s"
  return "$status"
}

# The 1, 5 and 15 minute load averages. Every rank needs a core of its own,
# so anything else running shows up directly in the figures; the reports
# state the load.
load_average() { cut -d' ' -f1-3 /proc/loadavg; }

# is_greater <a> <b>: succeeds when the number a is larger than b.
is_greater() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; }

# print_tables <file>...: each non-empty result file under a "## name" heading.
print_tables() {
  local file
  for file in "$@"; do
    [[ -s $file ]] || continue
    echo
    echo "## $(basename "$file" .txt)"
    cat "$file"
  done
}

# column_of <file> <size> <field>: one column of a result table for one size
# (fields as in nccl-tests: 6 = out-of-place time in us, 8 = out-of-place
# busbw, 10 = in-place time, 12 = in-place busbw in GB/s). Empty when the
# file, the size or a number there is absent (N/A).
column_of() {
  [[ -s $1 ]] || return 0
  awk -v size="$2" -v field="$3" \
    '$1 !~ /^#/ && $1 == size { if ($field ~ /^[0-9.]+$/) print $field; exit }' "$1"
}

# wrong_in <file>...: the wrong elements counted over the result tables
# (#wrong columns 9 and 13, which nccl-tests and hora-perf print with %g:
# 1.04858e+06 from a million on), or n/a when no table had the column. A file
# that is missing (a pattern that matched nothing) counts as no table, not
# as a failure, so that `wrong=$(wrong_in ...)` never stops a set -e script.
wrong_in() {
  { cat "$@" 2>/dev/null || true; } |
    awk '$1 ~ /^[0-9]+$/ { for (f = 9; f <= 13; f += 4) if ($f ~ /^[0-9.]+(e[+][0-9]+)?$/) { w += $f; n++ } }
         END { if (n) print w + 0; else print "n/a" }'
}

# ratio <a> <b>: a / b with two decimals, or n/a when either is missing or b is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

# show <value>: the value, or n/a when it is empty.
show() { [[ -n $1 ]] && echo "$1" || echo "n/a"; }

# --- Spread over launches -------------------------------------------------
# Each configuration runs in several separate launches (the machine's speed
# drifts over minutes, and a single launch can land in a slow state), so
# every figure of a summary is the median of the launches with their
# minimum and maximum.

# spread: reads one number a line on stdin and prints "median min max n"
# (the median of an even count is the mean of the middle two; %.10g keeps
# the figures as the tables print them); nothing when no number came.
spread() {
  sort -g | awk '{ v[NR] = $1 }
    END { if (NR == 0) exit
          m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
          printf "%.10g %.10g %.10g %d\n", m, v[1], v[NR], NR }'
}

# columns_of <size> <field> <file>...: column_of of every file, one a line.
columns_of() {
  local size=$1 field=$2 file
  shift 2
  for file in "$@"; do
    column_of "$file" "$size" "$field"
  done
}

# sizes_in <file>...: every size that appears in the result tables, in order.
sizes_in() {
  # Not 0: hora-perf, as nccl-tests, cuts a split collective's piece per
  # rank to whole 16 bytes, so an all-gather of 8 bytes on 2 ranks moves
  # nothing, and a figure with a log2 size axis has no place for it.
  cat "$@" 2>/dev/null | awk '$1 ~ /^[0-9]+$/ && $1 > 0 { print $1 }' | sort -un
}

# median_of <spread> / show_spread <spread>: the median alone, or
# "median [min-max]", of a spread line; n/a when it is empty.
median_of() { echo "${1%% *}"; }
show_spread() {
  local median low high count
  read -r median low high count <<<"$1" || true
  [[ -n $median ]] || { echo n/a; return; }
  echo "$median [$low-$high]"
}

# summary_figure <file> <tag> <key>: a figure of a "# <tag>: key value,
# key value ..." line, such as mem_bandwidth's "# memory:" or core_to_core's
# "# core-to-core:"; empty when the file, the line or the key is absent.
summary_figure() {
  [[ -s $1 ]] || return 0
  awk -v tag="# $2:" -v key="$3" 'index($0, tag) == 1 {
      for (i = 1; i < NF; i++)
        if ($i == key) { v = $(i + 1); sub(/,$/, "", v); print v; exit } }' "$1"
}

# figures_of <key> <tag> <file>...: summary_figure of each file.
figures_of() {
  local key=$1 tag=$2 file
  shift 2
  for file in "$@"; do summary_figure "$file" "$tag" "$key"; done
}

# --- summary.tsv: the figures for plot.py and other programs ---------------
# One header line, then one row per figure, tab-separated (the format is
# described at the top of plot.py):
#   kind tool collective size_bytes metric median min max n

# tsv_start <file>: a new file with only the header.
tsv_start() {
  printf 'kind\ttool\tcollective\tsize_bytes\tmetric\tmedian\tmin\tmax\tn\n' >"$1"
}

# tsv_row <file> <kind> <tool> <collective> <size> <metric> <spread>: one
# row; nothing when the spread is empty (no launch gave a figure).
tsv_row() {
  local median low high count
  read -r median low high count <<<"$7" || true
  [[ -n $median ]] || return 0
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" "$6" "$median" "$low" "$high" \
    "$count" >>"$1"
}

# --- Figures -----------------------------------------------------------------

# plot_python: the first Python 3 that can import matplotlib (Debian's
# python3-matplotlib installs into /usr/bin/python3, which another python3
# earlier on PATH would not see); nothing when there is none.
plot_python() {
  local python
  for python in /usr/bin/python3 "$(command -v python3 || true)"; do
    if [[ -x $python ]] && "$python" -c 'import matplotlib' 2>/dev/null; then
      echo "$python"
      return
    fi
  done
}

# plot_summary <summary.tsv> <folder> <title>: draws the figures of a
# summary with plot.py when matplotlib is there; says how to get it when it
# is not. Prints one line for the report either way.
plot_summary() {
  local python
  python=$(plot_python)
  if [[ -z $python ]]; then
    echo "# figures: not drawn, matplotlib is missing (sudo apt-get install python3-matplotlib,"
    echo "#          then: /usr/bin/python3 $src/plot.py $1 $2)"
    return
  fi
  # plot.py lists the files it wrote on stdout; the report names the folder.
  if "$python" "$src/plot.py" "$1" "$2" --title "$3" >/dev/null; then
    echo "# figures: $2 (PNG and SVG, from $1)"
  else
    echo "# figures: plot.py failed on $1 (its errors are above, on stderr)"
  fi
}

# finish_report <summary.tsv> <results folder> <hora built: 1 or 0> <plot title> [failed run names...]
# The lines every comparison ends with: the runs that failed, whether hora
# ran at all, where the summary for programs is, and the figures drawn from
# it into <results>/figures.
finish_report() {
  local tsv=$1 results=$2 hora_built=$3 title=$4
  shift 4
  if (($#)); then
    echo "# FAILED or timed out (errors in $results/<name>.err): $*"
  fi
  if ((!hora_built)); then
    echo "# hora was not run: hora-perf or hora-run is not built"
  fi
  echo "# summary for programs: $tsv"
  plot_summary "$tsv" "$results/figures" "$title"
}

# exit_with_verdict <wrong elements: a number or n/a> [failed run names...]
# Ends a comparison script once its report is complete. A run that failed,
# timed out or counted wrong elements makes the figures beside it
# suspect, so the script then exits with 1 after one line saying how many;
# whoever runs it (a person, a loop, CI) notices from the status alone.
# n/a wrong elements (no table had the column) is not a failure by itself:
# a run without a table is already among the failed.
exit_with_verdict() {
  local wrong=$1
  shift
  local failed=$#
  [[ $wrong =~ ^[0-9]+$ ]] || wrong=0
  if ((failed == 0 && wrong == 0)); then
    exit 0
  fi
  echo "# FAILED: $failed run(s) failed or timed out, $wrong wrong element(s) reported"
  exit 1
}
