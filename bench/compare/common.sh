# Helpers shared by the comparison scripts of this folder (compare_tcp.sh,
# compare_shm.sh). Sourced, not run: each function takes what it works on as
# arguments, so the scripts keep their own settings and result folders.
# shellcheck shell=bash

# The repository, and this folder with the peer programs' sources.
# shellcheck disable=SC2034  # used by the scripts that source this file
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck disable=SC2034
src="$repo/bench/compare"

# Progress and errors go to stderr; stdout carries the report alone.
note() { printf '%s\n' "$*" >&2; }

# require_packages <what:package>...
# Each <what> is a command to find on PATH, or an absolute path of a file
# that must exist (a header, say); <package> is the Debian package that
# provides it. Installs the missing packages when running as root with
# apt-get, otherwise says what to install and exits.
require_packages() {
  local pair what missing=()
  for pair in "$@"; do
    what=${pair%%:*}
    if [[ $what == /* ]]; then
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

# ratio <a> <b>: a / b with two decimals, or n/a when either is missing or b is 0.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }

# show <value>: the value, or n/a when it is empty.
show() { [[ -n $1 ]] && echo "$1" || echo "n/a"; }
