#!/usr/bin/env bash
# Two builds of hora side by side, launch by launch: did a change make a
# collective faster or slower? Each launch of one build is followed by the
# same launch of the other (the machine's speed drifts over minutes, and
# alternating gives both the same conditions), REPEATS times, and the
# summary shows each build's median busbw (or time, for latency) with the
# spread of the launches, and their ratio.
#
#   bench/compare/compare_builds.sh <before-builddir> <after-builddir>
#
# Runs, with 2 ranks on this machine, for each transport in TRANSPORTS:
#   - all_reduce, all_gather, reduce_scatter and broadcast of MIN_BYTES to
#     MAX_BYTES (x2 steps), ITERS and WARMUP each;
#   - all_reduce and all_gather of 8 bytes to LAT_MAX_BYTES (x4 steps),
#     LAT_ITERS and LAT_WARMUP each, for latency.
# Knobs (environment): TRANSPORTS (default "shm tcp"), REPEATS (default 5),
# MIN_BYTES and MAX_BYTES (16M, 64M), ITERS and WARMUP (10, 3), LAT_MAX_BYTES
# (64K), LAT_ITERS and LAT_WARMUP (2000, 200), STEP_TIMEOUT (300 s). Results
# stay in <after-builddir>/bench/compare/results-builds.
# Exit status, once the whole report is printed: 1 when any run failed,
# timed out or reported wrong elements (a last line says how many), else 0.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

if (($# != 2)); then
  note "usage: $0 <before-builddir> <after-builddir>"
  exit 2
fi
before=$(realpath "$1")
after=$(realpath "$2")
TRANSPORTS=${TRANSPORTS:-shm tcp}
REPEATS=${REPEATS:-5}
MIN_BYTES=${MIN_BYTES:-16M}
MAX_BYTES=${MAX_BYTES:-64M}
ITERS=${ITERS:-10}
WARMUP=${WARMUP:-3}
LAT_MAX_BYTES=${LAT_MAX_BYTES:-64K}
LAT_ITERS=${LAT_ITERS:-2000}
LAT_WARMUP=${LAT_WARMUP:-200}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}
results="$after/bench/compare/results-builds"

for build in "$before" "$after"; do
  for tool in bench/perf/hora-perf tools/hora-run/hora-run; do
    if [[ ! -x $build/$tool ]]; then
      note "$build/$tool is not built (meson compile -C $build)"
      exit 2
    fi
  done
done
if ! [[ $REPEATS =~ ^[1-9][0-9]*$ ]]; then
  note "REPEATS must be a whole number of at least 1, not '$REPEATS'"
  exit 2
fi

collectives=(all_reduce all_gather reduce_scatter broadcast)
latency_collectives=(all_reduce all_gather)
big=(-b "$MIN_BYTES" -e "$MAX_BYTES" -f 2 -d float -o sum -n "$ITERS" -w "$WARMUP" -c 1)
small=(-b 8 -e "$LAT_MAX_BYTES" -f 4 -d float -o sum -n "$LAT_ITERS" -w "$LAT_WARMUP" -c 1)

mkdir -p "$results"
rm -f "$results"/*.txt "$results"/*.err
failed=()
run() { run_step "$STEP_TIMEOUT" "$results" "$@" || failed+=("$1"); }
# launch <name> <build> <transport> <hora-perf arguments...>
launch() {
  local name=$1 build=$2 transport=$3
  shift 3
  run "$name" env HORA_TRANSPORT="$transport" "$build/tools/hora-run/hora-run" -n 2 \
    "$build/bench/perf/hora-perf" "$@"
}

load_before=$(load_average)
started=$SECONDS
started_at=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
for transport in $TRANSPORTS; do
  for ((repeat = 1; repeat <= REPEATS; repeat++)); do
    # Which build goes first alternates from repeat to repeat, so that a
    # first launch's advantage or penalty falls on both alike.
    order=(before after)
    ((repeat % 2 == 0)) && order=(after before)
    for collective in "${collectives[@]}"; do
      for which in "${order[@]}"; do
        build=$before
        [[ $which == after ]] && build=$after
        launch "$which-$transport-$collective-r$repeat" "$build" "$transport" "$collective" "${big[@]}"
      done
    done
    for collective in "${latency_collectives[@]}"; do
      for which in "${order[@]}"; do
        build=$before
        [[ $which == after ]] && build=$after
        launch "$which-$transport-lat_$collective-r$repeat" "$build" "$transport" "$collective" "${small[@]}"
      done
    done
  done
done

# stats <build> <transport> <collective> <size> <field>: the spread over
# the repeats, "median min max n", or empty.
stats() { columns_of "$4" "$5" "$results/$1-$2-$3"-r*.txt | spread; }
sizes_of() { sizes_in "$results"/*-"$1-$2"-r*.txt; }  # sizes_of <transport> <collective>
# row <transport> <collective> <size> <field>: before and after, median
# [min-max], and after/before.
row() {
  local b a
  b=$(stats before "$1" "$2" "$3" "$4")
  a=$(stats after "$1" "$2" "$3" "$4")
  printf '%-4s %-18s %10s  %-24s %-24s %6s\n' "$1" "$2" "$3" "$(show_spread "$b")" \
    "$(show_spread "$a")" "$(ratio "$(median_of "$a")" "$(median_of "$b")")"
}

echo "# hora, two builds alternately, 2 ranks on $(hostname), $(nproc) cores"
echo "# before: $before"
echo "# after:  $after"
echo "# started $started_at; load average (1, 5, 15 min) before: $load_before, after: $(load_average)"
echo "# bandwidth: hora-perf <collective> ${big[*]}"
echo "# latency:   hora-perf <collective> ${small[*]}"
echo "# every launch run $REPEATS time(s), before and after alternately, the first of the two swapping each repeat"
# table <field> <name>...: a row per transport, table name and size.
table() {
  local field=$1 transport name size
  shift
  for transport in $TRANSPORTS; do
    for name in "$@"; do
      while read -r size; do
        [[ -n $size ]] || continue  # no rows: an empty table, not the end of the report
        row "$transport" "$name" "$size" "$field"
      done <<<"$(sizes_of "$transport" "$name")"
    done
  done
}
for place in ip oop; do
  busbw=12 time=10
  [[ $place == ip ]] || { busbw=8; time=6; }
  echo
  echo "# busbw GB/s, $place: median [min-max] of $REPEATS; after/before above 1: after is faster"
  table "$busbw" "${collectives[@]}"
  echo
  echo "# latency us (time column), $place: median [min-max] of $REPEATS; after/before below 1: after is faster"
  table "$time" "${latency_collectives[@]/#/lat_}"
done
echo
wrong=$(wrong_in "$results"/*.txt)
echo "# wrong elements over every table: $wrong"
if ((${#failed[@]})); then
  echo "# FAILED or timed out (errors in $results/<name>.err): ${failed[*]}"
fi
echo "# total run time: $((SECONDS - started)) s"
exit_with_verdict "$wrong" "${failed[@]}"
