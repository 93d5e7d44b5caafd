#!/usr/bin/env bash
# Side-by-side all-reduce over TCP on one machine: hora against Gloo and
# Open MPI, and all three against what the machine's loopback can carry.
#
#   bench/compare/compare_tcp.sh [builddir]      (builddir defaults to ./build)
#
# It builds the peer programs of this folder into <builddir>/bench/compare
# with the system compilers (-O2, against Debian's libgloo-dev and Open MPI),
# then runs REPEATS rounds; each round runs, with 2 ranks on this machine:
#   - tcp_stream: memcpy and loopback TCP stream bandwidth (the limits);
#   - mem_bandwidth: memcpy with 1 thread and with 2 at once (the limits of
#     the memory, for the figures);
#   - all_reduce of MIN_BYTES to MAX_BYTES (x2 steps), then of 8 bytes to
#     LAT_MAX_BYTES (x2 steps) for latency, each with:
#       hora-perf over TCP (skipped if the build dir has no hora-perf);
#       Gloo's ring all-reduces over TCP on 127.0.0.1 (GLOO_ALGORITHMS);
#       MPI_Allreduce (mpi_collectives all_reduce) with Open MPI's TCP
#       transport on lo only;
#       the same with Open MPI's shared memory (vader), for reference;
# each launch a separate process, the libraries alternating launch by
# launch (in the reverse order every other round). It prints every table,
# then per size the median [min-max] over the launches of each library and
# the ratios of the medians. <results>/summary.tsv holds the same figures
# for programs (format: plot.py's header), and plot.py draws them into
# <results>/figures when matplotlib is installed.
#
# Knobs (environment): MIN_BYTES and MAX_BYTES (default 16M and 256M), ITERS
# and WARMUP for them (default 20 and 5), LAT_MAX_BYTES (default 8: the
# latency table has the one size), LAT_ITERS and LAT_WARMUP for it (default
# 1000 and 100), REPEATS (launches of each configuration, default 5, at
# least 1), GLOO_ALGORITHMS (default "allreduce_ring ring_chunked ring"),
# STREAM_BYTES (bytes per tcp_stream run, default 1073741824), MEM_BYTES
# (mem_bandwidth's buffer size, default 256M), STEP_TIMEOUT
# (seconds any one run may take, default 600). Results stay in
# <results> = <builddir>/bench/compare/results.
# Exit status, once the whole report is printed: 1 when any run failed,
# timed out or reported wrong elements (a last line says how many), else 0.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

builddir=$(realpath -m "${1:-$repo/build}")
out="$builddir/bench/compare"
results="$out/results"
MIN_BYTES=${MIN_BYTES:-16M}
MAX_BYTES=${MAX_BYTES:-256M}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
LAT_MAX_BYTES=${LAT_MAX_BYTES:-8}
LAT_ITERS=${LAT_ITERS:-1000}
LAT_WARMUP=${LAT_WARMUP:-100}
REPEATS=${REPEATS:-5}
GLOO_ALGORITHMS=${GLOO_ALGORITHMS:-allreduce_ring ring_chunked ring}
STREAM_BYTES=${STREAM_BYTES:-1073741824}
MEM_BYTES=${MEM_BYTES:-256M}
# No single run may hang the comparison.
STEP_TIMEOUT=${STEP_TIMEOUT:-600}

big=(-b "$MIN_BYTES" -e "$MAX_BYTES" -f 2 -d float -o sum -n "$ITERS" -w "$WARMUP" -c 1)
small=(-b 8 -e "$LAT_MAX_BYTES" -f 2 -d float -o sum -n "$LAT_ITERS" -w "$LAT_WARMUP" -c 1)
read -ra gloo_algorithms <<<"$GLOO_ALGORITHMS"

if ! [[ $STREAM_BYTES =~ ^[1-9][0-9]*$ ]]; then
  note "STREAM_BYTES must be a number of bytes (no K/M/G suffix), not '$STREAM_BYTES'"
  exit 2
fi
if ! [[ $REPEATS =~ ^[1-9][0-9]*$ ]]; then
  note "REPEATS must be a whole number of at least 1, not '$REPEATS'"
  exit 2
fi

# --- 1. The peers' packages -------------------------------------------------
require_packages /usr/include/gloo/allreduce.h:libgloo-dev mpirun:openmpi-bin \
  deb:libopenmpi-dev

# --- 2. Build the peers (only when a source is newer than the binary) ------
mkdir -p "$out" "$results"
build_program "$out/tcp_stream" "$src/tcp_stream.cc" g++ -O2 -pthread
build_program "$out/mem_bandwidth" "$src/mem_bandwidth.cc" g++ -O3 -pthread
build_program "$out/gloo_allreduce" "$src/gloo_allreduce.cc" g++ -O2 -lgloo -pthread
# OMPI_SKIP_MPICXX: the program uses the C API; skip the deprecated C++ one.
build_program "$out/mpi_collectives" "$src/mpi_collectives.cc" mpicxx -O2 -DOMPI_SKIP_MPICXX

# --- 3. Run everything -----------------------------------------------------
mpirun_base=(mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1)
# pml ob1 is forced because it is the layer that honours the btl list; with
# btl tcp,self and no shared-memory btl, the two ranks can reach each other
# only through TCP, on lo only.
# btl_base_verbose 30 makes each rank log its TCP connections (only while
# connecting, so the timings are unaffected); the report checks that log.
# shellcheck disable=SC2054  # the commas belong to Open MPI's btl lists
mpi_tcp=("${mpirun_base[@]}" --mca btl tcp,self --mca btl_tcp_if_include lo
  --mca btl_base_verbose 30)
# shellcheck disable=SC2054
mpi_shm=("${mpirun_base[@]}" --mca btl self,vader)
hora_perf="$builddir/bench/perf/hora-perf"
hora_run="$builddir/tools/hora-run/hora-run"
have_hora=1
[[ -x $hora_perf && -x $hora_run ]] || have_hora=0

# The launches of one table, by tool name (the names of summary.tsv): hora,
# gloo-<algorithm>, mpi-tcp, mpi-shm (the reference).
tools=()
((!have_hora)) || tools+=(hora)
for algorithm in "${gloo_algorithms[@]}"; do tools+=("gloo-$algorithm"); done
tools+=(mpi-tcp mpi-shm)

failed=()
# run <name> <command...>: a failed run leaves an empty table, so the
# summary reads n/a for it rather than figures of a broken run; the report
# lists it as failed.
run() { run_step "$STEP_TIMEOUT" "$results" "$@" || { : >"$results/$1.txt"; failed+=("$1"); }; }

# launch <tool> <table> <repeat> <arguments...>: one launch of one tool,
# into <tool>-<table>-r<repeat>.txt.
launch() {
  local tool=$1 name="$1-$2-r$3"
  shift 3
  case $tool in
    hora) run "$name" env HORA_TRANSPORT=tcp "$hora_run" -n 2 "$hora_perf" all_reduce "$@" ;;
    gloo-*) run "$name" "$out/gloo_allreduce" -a "${tool#gloo-}" "$@" ;;
    mpi-tcp) run "$name" "${mpi_tcp[@]}" "$out/mpi_collectives" all_reduce "$@" ;;
    mpi-shm) run "$name" "${mpi_shm[@]}" "$out/mpi_collectives" all_reduce "$@" ;;
  esac
}

# round <table> <repeat> <arguments...>: one launch of every tool, in the
# reverse order every other round: whoever runs first may find the machine
# in another state than whoever follows.
round() {
  local table=$1 repeat=$2 i
  shift 2
  if ((repeat % 2)); then
    for ((i = 0; i < ${#tools[@]}; i++)); do launch "${tools[i]}" "$table" "$repeat" "$@"; done
  else
    for ((i = ${#tools[@]} - 1; i >= 0; i--)); do launch "${tools[i]}" "$table" "$repeat" "$@"; done
  fi
}

load_before=$(load_average)
if is_greater "${load_before%% *}" 0.5; then
  note "warning: load average is $load_before; other work on this machine will distort the figures"
fi

rm -f "$results"/*.txt "$results"/*.err "$results"/summary.tsv
rm -rf "$results/figures"
started=$SECONDS
started_at=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

if ((!have_hora)); then
  note "== hora: skipped, $hora_perf or $hora_run is not built (meson compile -C $builddir)"
fi
# Round after round, every configuration once, so that a slow spell of the
# machine touches all of them alike.
for ((repeat = 1; repeat <= REPEATS; repeat++)); do
  run "limit-r$repeat" "$out/tcp_stream" -s "$STREAM_BYTES"
  run "memory-r$repeat" "$out/mem_bandwidth" -s "$MEM_BYTES"
  round big "$repeat" "${big[@]}"
  round lat "$repeat" "${small[@]}"
done

# --- 4. Report ---------------------------------------------------------------
echo "# All-reduce, float sum, 2 ranks on $(hostname), $(nproc) cores, started $started_at"
echo "# sizes $MIN_BYTES..$MAX_BYTES: -n $ITERS -w $WARMUP; 8..$LAT_MAX_BYTES B: -n $LAT_ITERS -w $LAT_WARMUP"
echo "# load average (1, 5, 15 min) before: $load_before, after: $(load_average)"
echo "# $REPEATS round(s): every configuration launched once per round, in the reverse order in even rounds"
print_tables "$results"/limit-r*.txt "$results"/memory-r*.txt "$results"/*-big-r*.txt "$results"/*-lat-r*.txt

# stats <tool> <table> <size> <field>: the spread over the launches (fields:
# 10 = in-place time in us, 12 = in-place busbw in GB/s).
stats() { columns_of "$3" "$4" "$results/$1-$2"-r*.txt | spread; }
sizes_of() { sizes_in "$results"/*-"$1"-r*.txt; }  # sizes_of <table>
# The Gloo variant with the highest median busbw at one size: "name spread".
best_gloo() {  # best_gloo <size>
  local algorithm figures best="" best_name=""
  for algorithm in "${gloo_algorithms[@]}"; do
    figures=$(stats "gloo-$algorithm" big "$1" 12)
    [[ -n $figures ]] || continue
    if [[ -z $best ]] || is_greater "$(median_of "$figures")" "$(median_of "$best")"; then
      best=$figures best_name=$algorithm
    fi
  done
  [[ -z $best ]] || echo "$best_name $best"
}
# limit_figures <key>: the spread of one figure of tcp_stream over its runs.
limit_figures() {
  local file
  for file in "$results"/limit-r*.txt; do summary_figure "$file" tcp "$1"; done | spread
}
memcpy=$(limit_figures memcpy)
stream_one=$(limit_figures one_direction)
stream_both=$(limit_figures both_directions)
copy_1t=$(figures_of copy_1t memory "$results"/memory-r*.txt | spread)
copy_2t=$(figures_of copy_2t memory "$results"/memory-r*.txt | spread)

echo
connections=$(cat "$results"/mpi-tcp-*.err 2>/dev/null | grep -c 'now connected to 127.0.0.1' || true)
mpi_launches=$(find "$results" -maxdepth 1 -name 'mpi-tcp-*.err' | wc -l)
echo "# Open MPI over TCP: $(show "$connections") TCP connection(s) over 127.0.0.1 logged in"
echo "# $mpi_launches launch(es) (expect 2 a launch, one per rank)"
echo "# Limits, median [min-max] over the runs of tcp_stream (each the best of its repeats):"
echo "#   memcpy $(show_spread "$memcpy") GB/s; loopback stream one direction $(show_spread "$stream_one")"
echo "#   GB/s, both directions at once $(show_spread "$stream_both") GB/s per direction (the"
echo "#   ceiling for a 2-rank ring)."
echo "# Memory, over the runs of mem_bandwidth: memcpy with 1 thread $(show_spread "$copy_1t") GB/s,"
echo "#   2 threads at once (both together) $(show_spread "$copy_2t") GB/s."
echo
echo "# Summary: in-place busbw (GB/s), median [min-max] of the launches; every peer supports"
echo "# in-place, Gloo's classic algorithms only that. gloo = its variant with the best median"
echo "# at that size. Ratios are of the medians; lim = the one-direction stream's median."
printf '%12s  %-22s %-22s %-22s %-22s %9s %9s %8s %8s %8s  %s\n' size hora gloo mpi-tcp mpi-shm \
  hora/gloo hora/mpi hora/lim gloo/lim mpi/lim "gloo variant"
while read -r size; do
  [[ -n $size ]] || continue
  hora=$(stats hora big "$size" 12)
  gloo_name="" gloo=""
  read -r gloo_name gloo <<<"$(best_gloo "$size")" || true
  mpi=$(stats mpi-tcp big "$size" 12)
  shm=$(stats mpi-shm big "$size" 12)
  limit=$(median_of "$stream_one")
  printf '%12s  %-22s %-22s %-22s %-22s %9s %9s %8s %8s %8s  %s\n' "$size" "$(show_spread "$hora")" \
    "$(show_spread "$gloo")" "$(show_spread "$mpi")" "$(show_spread "$shm")" \
    "$(ratio "$(median_of "$hora")" "$(median_of "$gloo")")" \
    "$(ratio "$(median_of "$hora")" "$(median_of "$mpi")")" \
    "$(ratio "$(median_of "$hora")" "$limit")" "$(ratio "$(median_of "$gloo")" "$limit")" \
    "$(ratio "$(median_of "$mpi")" "$limit")" "$(show "$gloo_name")"
done <<<"$(sizes_of big)"

echo
echo "# All-reduce latency, in place, us: median [min-max] of the launches, each the mean of"
echo "# $LAT_ITERS operations; hora/mpi below 1: hora is faster"
printf '%-26s' tool
sizes=()
while read -r size; do [[ -z $size ]] || sizes+=("$size"); done <<<"$(sizes_of lat)"
for size in "${sizes[@]}"; do printf ' %24s' "$size B"; done
echo
for tool in "${tools[@]}"; do
  label=$tool
  [[ $tool != mpi-shm ]] || label="mpi-shm (reference)"
  printf '%-26s' "$label"
  for size in "${sizes[@]}"; do printf ' %24s' "$(show_spread "$(stats "$tool" lat "$size" 10)")"; done
  echo
done
printf '%-26s' hora/mpi-tcp
for size in "${sizes[@]}"; do
  printf ' %24s' "$(ratio "$(median_of "$(stats hora lat "$size" 10)")" \
    "$(median_of "$(stats mpi-tcp lat "$size" 10)")")"
done
echo

# summary.tsv: the in-place figures (Gloo's classic algorithms have no
# out-of-place form), and the limits.
tsv="$results/summary.tsv"
tsv_start "$tsv"
for tool in "${tools[@]}"; do
  while read -r size; do
    [[ -z $size ]] || tsv_row "$tsv" result "$tool" all_reduce "$size" busbw_GBps \
      "$(stats "$tool" big "$size" 12)"
  done <<<"$(sizes_of big)"
  for size in "${sizes[@]}"; do
    tsv_row "$tsv" result "$tool" all_reduce "$size" time_us "$(stats "$tool" lat "$size" 10)"
  done
done
tsv_row "$tsv" limit memcpy-1-thread - - GBps "$copy_1t"
tsv_row "$tsv" limit memcpy-2-threads - - GBps "$copy_2t"
tsv_row "$tsv" limit tcp-one-direction - - GBps "$stream_one"
tsv_row "$tsv" limit tcp-both-directions - - GBps "$stream_both"

echo
wrong=$(wrong_in "$results"/*-big-r*.txt "$results"/*-lat-r*.txt)
echo "# wrong elements over every table: $wrong"
finish_report "$tsv" "$results" "$have_hora" \
  "TCP loopback, 2 ranks, float sum; median and range of $REPEATS launches; $started_at" "${failed[@]}"
echo "# total run time: $((SECONDS - started)) s"
exit_with_verdict "$wrong" "${failed[@]}"
