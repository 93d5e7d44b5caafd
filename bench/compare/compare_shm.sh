#!/usr/bin/env bash
# Side-by-side collectives through shared memory on one machine: hora's shm
# transport against Open MPI's default path between ranks of one host, and
# both against what the machine's memory and its two CPUs can carry.
#
#   bench/compare/compare_shm.sh [builddir]      (builddir defaults to ./build)
#
# It builds mpi_collectives, mem_bandwidth, tcp_stream and core_to_core into
# <builddir>/bench/compare with the system compilers, then runs REPEATS
# rounds; each round runs, with 2 ranks on this machine:
#   - mem_bandwidth: memcpy and float a += b, 1 thread and 2 at once;
#   - tcp_stream: loopback TCP both ways at once, for the figures (the
#     ceiling of a library that would carry these collectives over TCP);
#   - for all_reduce, all_gather, reduce_scatter and broadcast, MIN_BYTES to
#     MAX_BYTES (x2 steps):
#       HORA_TRANSPORT=shm hora-run -n 2 hora-perf <collective> ...
#       the same with -R 2 (buffers from ncclMemAlloc registered as
#       windows: zero copy between the ranks),
#       mpirun -np 2 mpi_collectives <collective> ...   (no --mca options:
#       Open MPI's own choice of transport and algorithm);
#   - all_reduce and all_gather of 8 bytes to LAT_MAX_BYTES (x2 steps), for
#     latency, hora and Open MPI;
# each launch a separate process, the libraries alternating launch by
# launch (Open MPI first in every other round), and core_to_core (latency
# and copy bandwidth between the two CPUs, a fraction of a second) right
# before every launch, so that each launch's machine state is on record.
# It prints every table, the machine state of each launch, then per size
# the median [min-max] over the launches of each library and the ratios of
# the medians. <results>/summary.tsv holds the same figures for programs
# (format: plot.py's header), and plot.py draws them into
# <results>/figures when matplotlib is installed.
#
# Knobs (environment): MIN_BYTES and MAX_BYTES (default 16M and 256M, steps
# of x2), ITERS and WARMUP for them (default 20 and 5), LAT_ITERS and
# LAT_WARMUP for the latency sizes (default 5000 and 500), LAT_MAX_BYTES
# (default 64K), REPEATS (launches of each configuration, default 5, at
# least 1), COLLECTIVES (the bandwidth collectives, default "all_reduce
# all_gather reduce_scatter broadcast"), MEM_BYTES (mem_bandwidth's buffer size, default 256M),
# STREAM_BYTES (bytes per tcp_stream run, a plain number, default 268435456),
# STEP_TIMEOUT (seconds any one run may take, default 600). Results stay in
# <results> = <builddir>/bench/compare/results-shm.
# Exit status, once the whole report is printed: 1 when any run failed,
# timed out or reported wrong elements (a last line says how many), else 0.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

builddir=$(realpath -m "${1:-$repo/build}")
out="$builddir/bench/compare"
results="$out/results-shm"
MIN_BYTES=${MIN_BYTES:-16M}
MAX_BYTES=${MAX_BYTES:-256M}
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
LAT_ITERS=${LAT_ITERS:-5000}
LAT_WARMUP=${LAT_WARMUP:-500}
LAT_MAX_BYTES=${LAT_MAX_BYTES:-64K}
REPEATS=${REPEATS:-5}
MEM_BYTES=${MEM_BYTES:-256M}
STREAM_BYTES=${STREAM_BYTES:-268435456}
if ! [[ $STREAM_BYTES =~ ^[1-9][0-9]*$ ]]; then
  note "STREAM_BYTES must be a number of bytes (no K/M/G suffix), not '$STREAM_BYTES'"
  exit 2
fi
# No single run may hang the comparison.
STEP_TIMEOUT=${STEP_TIMEOUT:-600}

read -r -a collectives <<<"${COLLECTIVES:-all_reduce all_gather reduce_scatter broadcast}"
big=(-b "$MIN_BYTES" -e "$MAX_BYTES" -f 2 -d float -o sum -n "$ITERS" -w "$WARMUP")
small=(-b 8 -e "$LAT_MAX_BYTES" -f 2 -d float -o sum -n "$LAT_ITERS" -w "$LAT_WARMUP")
latency_collectives=(all_reduce all_gather)

if ! [[ $REPEATS =~ ^[1-9][0-9]*$ ]]; then
  note "REPEATS must be a whole number of at least 1, not '$REPEATS'"
  exit 2
fi

# --- 1. Open MPI ------------------------------------------------------------
require_packages mpirun:openmpi-bin deb:libopenmpi-dev

# --- 2. Build the programs (only when a source is newer than the binary) ---
mkdir -p "$out" "$results"
# OMPI_SKIP_MPICXX: the program uses the C API; skip the deprecated C++ one.
build_program "$out/mpi_collectives" "$src/mpi_collectives.cc" mpicxx -O2 -DOMPI_SKIP_MPICXX
build_program "$out/tcp_stream" "$src/tcp_stream.cc" g++ -O2 -pthread
# -O3 vectorises the a += b loop, as a library's reduction kernel is.
build_program "$out/mem_bandwidth" "$src/mem_bandwidth.cc" g++ -O3 -pthread
build_program "$out/core_to_core" "$src/core_to_core.cc" g++ -O2 -pthread

# --- 3. Run everything -----------------------------------------------------
# Open MPI as a user gets it: no --mca options, so it picks its shared-memory
# transport and its collective algorithms itself.
mpirun_default=(mpirun --allow-run-as-root --oversubscribe -np 2)
hora_perf="$builddir/bench/perf/hora-perf"
hora_run="$builddir/tools/hora-run/hora-run"
# Host memory is what is compared here: hide any GPU, so that hora-perf's
# buffers and ncclMemAlloc (-R 2) are host memory.
export CUDA_VISIBLE_DEVICES=""
have_hora=1
[[ -x $hora_perf && -x $hora_run ]] || have_hora=0

failed=()
# run <name> <command...>: a failed run keeps what it printed (a table with
# #wrong, or the rows before a time-out); the summary lists it as failed.
run() { run_step "$STEP_TIMEOUT" "$results" "$@" || failed+=("$1"); }

launched=()  # the launches, in the order they ran
# launch <name> <command...>: one launch, with the state of the machine's
# two CPUs measured right before it (in c2c-<name>.txt). The host can move
# the vCPUs apart, and back, within seconds; a measurement taken at the
# start of the run would not say which state a later launch ran in.
launch() {
  run "c2c-$1" "$out/core_to_core"
  run "$@"
  launched+=("$1")
}

# round <table> <collective> <repeat> <arguments...>: one launch of each
# library for one table (hora and hora on windows for the bandwidth tables,
# only hora for latency), in the reverse order every other round: whoever
# runs first may find the machine in another state than whoever follows.
round() {
  local table=$1 collective=$2 repeat=$3 tool
  shift 3
  local tools=()
  if ((have_hora)); then
    tools+=(hora)
    [[ $table == lat_* ]] || tools+=(horawin)
  fi
  tools+=(mpi)
  if ((repeat % 2 == 0)); then
    local i reversed=()
    for ((i = ${#tools[@]} - 1; i >= 0; i--)); do reversed+=("${tools[i]}"); done
    tools=("${reversed[@]}")
  fi
  for tool in "${tools[@]}"; do
    case $tool in
      hora) launch "hora-$table-r$repeat" env HORA_TRANSPORT=shm "$hora_run" -n 2 "$hora_perf" \
        "$collective" "$@" ;;
      # ncclMemAlloc + ncclCommWindowRegister: zero copy between the ranks.
      horawin) launch "horawin-$table-r$repeat" env HORA_TRANSPORT=shm "$hora_run" -n 2 \
        "$hora_perf" "$collective" "$@" -R 2 ;;
      mpi) launch "mpi-$table-r$repeat" "${mpirun_default[@]}" "$out/mpi_collectives" \
        "$collective" "$@" ;;
    esac
  done
}

load_before=$(load_average)
# Every rank needs a core of its own: more than a quarter of the cores busy
# before the start means other work that will share them.
if is_greater "${load_before%% *}" "$(awk -v cores="$(nproc)" 'BEGIN { print cores / 4 }')"; then
  note "warning: load average is $load_before on $(nproc) cores; other work on this machine will distort the figures"
fi

rm -f "$results"/*.txt "$results"/*.err "$results"/summary.tsv
rm -rf "$results/figures"
started=$SECONDS
started_at=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

if ((!have_hora)); then
  note "== hora: skipped, $hora_perf or $hora_run is not built (meson compile -C $builddir)"
fi
# Round after round, every configuration once: each configuration's
# launches are spread over the whole run, so a slow spell of the machine
# touches all of them alike instead of all launches of one.
for ((repeat = 1; repeat <= REPEATS; repeat++)); do
  run "memory-r$repeat" "$out/mem_bandwidth" -s "$MEM_BYTES"
  run "tcp-r$repeat" "$out/tcp_stream" -s "$STREAM_BYTES"
  for collective in "${collectives[@]}"; do
    round "$collective" "$collective" "$repeat" "${big[@]}"
  done
  for collective in "${latency_collectives[@]}"; do
    round "lat_$collective" "$collective" "$repeat" "${small[@]}"
  done
done

# --- 4. Report ---------------------------------------------------------------
ompi_version=$(ompi_info --version 2>/dev/null | head -n 1 || true)
# The point-to-point transports (btl) this Open MPI has; by default it uses
# every one that can reach the peer, shared memory (vader) between ranks of
# one host.
ompi_btls=$(ompi_info 2>/dev/null | awk -F'[:(]' '/MCA btl:/ { gsub(/ /, "", $2); printf "%s%s", sep, $2; sep = ", " }' || true)

echo "# Collectives through shared memory, float, 2 ranks on $(hostname), $(nproc) cores"
echo "# started $started_at; load average (1, 5, 15 min) before: $load_before, after: $(load_average)"
echo "# hora:     HORA_TRANSPORT=shm hora-run -n 2 hora-perf <collective> ${big[*]}"
echo "# hora-win: the same with -R 2 (buffers from ncclMemAlloc, registered as windows)"
echo "# Open MPI: ${mpirun_default[*]} mpi_collectives <collective> ${big[*]}"
echo "#           ${ompi_version:-Open MPI version unknown}, default path (no --mca options); btl components: ${ompi_btls:-unknown}"
echo "# latency:  ${latency_collectives[*]} ${small[*]}"
echo "# $REPEATS round(s): every configuration launched once per round, the libraries alternately"
echo "# (Open MPI first in even rounds); core_to_core run right before every launch"
print_tables "$results"/memory-r*.txt "$results"/tcp-r*.txt "$results"/hora-*.txt "$results"/horawin-*.txt \
  "$results"/mpi-*.txt

# launch_figure <name>: the figure of one launch that shows its state best:
# in-place busbw at the largest size of a bandwidth table, in-place time at
# the smallest size of a latency table.
launch_figure() {
  local file="$results/$1.txt"
  [[ -s $file ]] || return 0
  if [[ $1 == *-lat_* ]]; then
    awk '$1 ~ /^[0-9]+$/ { print $10 " us at " $1 " B"; exit }' "$file"
  else
    awk '$1 ~ /^[0-9]+$/ { last = $12 " GB/s at " $1 " B" } END { if (last != "") print last }' "$file"
  fi
}
echo
echo "# Machine state at each launch: core_to_core right before it (one-way cache-line"
echo "# latency between the two CPUs, and a copy from one to the other through a ring of"
echo "# blocks), and the launch's own in-place figure. A launch in a slow machine state shows"
echo "# a high latency and a low copy rate here, whichever library it ran."
printf '%-34s %10s %10s   %s\n' launch c2c-ns c2c-GB/s "in-place figure"
for name in "${launched[@]}"; do
  printf '%-34s %10s %10s   %s\n' "$name" \
    "$(show "$(summary_figure "$results/c2c-$name.txt" core-to-core latency)")" \
    "$(show "$(summary_figure "$results/c2c-$name.txt" core-to-core copy)")" \
    "$(show "$(launch_figure "$name")")"
done

memory_files=("$results"/memory-r*.txt)
c2c_files=("$results"/c2c-*.txt)
copy_1t=$(figures_of copy_1t memory "${memory_files[@]}" | spread)
copy_2t=$(figures_of copy_2t memory "${memory_files[@]}" | spread)
add_2t=$(figures_of add_2t memory "${memory_files[@]}" | spread)
c2c_latency=$(figures_of latency core-to-core "${c2c_files[@]}" | spread)
c2c_copy=$(figures_of copy core-to-core "${c2c_files[@]}" | spread)
tcp_both=$(figures_of both_directions tcp "$results"/tcp-r*.txt | spread)

# model_busbw <collective> <copy rate>: the busbw a collective of 2 ranks
# would reach if it were bound by memory traffic alone, moving only the
# bytes no algorithm can avoid: each rank reads its input once and writes
# its output once, while what passes between the ranks stays in the caches
# (the size is S, as in nccl-tests):
#   all_reduce      each rank reads S and writes S;
#   all_gather      each reads S/n (its part) and writes S;
#   reduce_scatter  each reads S and writes S/n;
#   broadcast       the root reads S, every other rank writes S.
# All ranks together move that much at the rate two threads copying at
# once drive: C bytes copied a second (mem_bandwidth's copy_2t) is 2C of
# reads and writes. The time is total bytes / 2C, and busbw follows with
# nccl-tests' factor. The ratio hora/model then says how close a run comes
# to what the memory allows (above 1 where part of the buffers stay in
# the caches between operations, at sizes the last-level cache holds).
model_busbw() {
  awk -v c="$2" -v kind="$1" -v n=2 'BEGIN {
    if (c == "") exit
    if (kind == "all_reduce") { bytes = 2 * n; factor = 2 * (n - 1) / n }
    else if (kind == "all_gather" || kind == "reduce_scatter") { bytes = 1 + n; factor = (n - 1) / n }
    else if (kind == "broadcast") { bytes = n; factor = 1 }
    else exit
    # bytes: the traffic of all ranks in units of S; time = bytes S / 2C.
    printf "%.4g", factor * 2 * c / bytes
  }'
}

# stats <tool> <table> <size> <field>: the spread over the launches.
stats() { columns_of "$3" "$4" "$results/$1-$2"-r*.txt | spread; }
sizes_of() { sizes_in "$results"/{hora,horawin,mpi}-"$1"-r*.txt; }  # sizes_of <table>

# bandwidth_table <field>: one row per collective and size, each library's
# spread and the ratios of the medians.
bandwidth_table() {
  local field=$1 collective size hora win mpi
  printf '%-14s %10s  %-22s %-22s %-22s %8s %8s %8s %8s\n' collective size hora hora-win mpi \
    hora/mpi win/mpi hora/mem hora/mod
  for collective in "${collectives[@]}"; do
    local model
    model=$(model_busbw "$collective" "$(median_of "$copy_2t")")
    while read -r size; do
      [[ -n $size ]] || continue
      hora=$(stats hora "$collective" "$size" "$field")
      win=$(stats horawin "$collective" "$size" "$field")
      mpi=$(stats mpi "$collective" "$size" "$field")
      printf '%-14s %10s  %-22s %-22s %-22s %8s %8s %8s %8s\n' "$collective" "$size" \
        "$(show_spread "$hora")" "$(show_spread "$win")" "$(show_spread "$mpi")" \
        "$(ratio "$(median_of "$hora")" "$(median_of "$mpi")")" \
        "$(ratio "$(median_of "$win")" "$(median_of "$mpi")")" \
        "$(ratio "$(median_of "$hora")" "$(median_of "$copy_2t")")" \
        "$(ratio "$(median_of "$hora")" "$model")"
    done <<<"$(sizes_of "$collective")"
  done
}
latency_table() {  # latency_table <field>
  local field=$1 collective size hora mpi
  printf '%-14s %10s  %-22s %-22s %8s\n' collective size hora mpi hora/mpi
  for collective in "${latency_collectives[@]}"; do
    while read -r size; do
      [[ -n $size ]] || continue
      hora=$(stats hora "lat_$collective" "$size" "$field")
      mpi=$(stats mpi "lat_$collective" "$size" "$field")
      printf '%-14s %10s  %-22s %-22s %8s\n' "$collective" "$size" "$(show_spread "$hora")" \
        "$(show_spread "$mpi")" "$(ratio "$(median_of "$hora")" "$(median_of "$mpi")")"
    done <<<"$(sizes_of "lat_$collective")"
  done
}

echo
echo "# Limits, median [min-max] over their runs:"
echo "#   memcpy, bytes copied per second: 1 thread $(show_spread "$copy_1t") GB/s,"
echo "#     2 threads at once (both together) $(show_spread "$copy_2t") GB/s;"
echo "#     a += b with 2 threads $(show_spread "$add_2t") GB/s ($REPEATS run(s) of mem_bandwidth)"
echo "#   loopback TCP, both directions at once: $(show_spread "$tcp_both") GB/s per direction"
echo "#   core to core: latency $(show_spread "$c2c_latency") ns, copy $(show_spread "$c2c_copy") GB/s"
echo "#     (one run before each launch)"
echo
echo "# Summary: busbw in GB/s (nccl-tests' factors), in place, median [min-max] of the launches."
echo "# hora-win = hora on windows (hora-perf -R 2: ncclMemAlloc buffers registered with"
echo "# ncclCommWindowRegister; the ranks read and write each other's buffers directly), against"
echo "# the same Open MPI launches (its buffers are plain). Ratios are of the medians; above 1:"
echo "# hora is faster. mem = memcpy with both threads copying at once, median. mod = the"
echo "# memory-traffic model (each rank reads its input and writes its output once, at the"
echo "# rate of mem): busbw all_reduce $(show "$(model_busbw all_reduce "$(median_of "$copy_2t")")"),"
echo "# all_gather and reduce_scatter $(show "$(model_busbw all_gather "$(median_of "$copy_2t")")"), broadcast $(show "$(model_busbw broadcast "$(median_of "$copy_2t")")") GB/s."
bandwidth_table 12
echo
echo "# Out of place, the same. MPI_Bcast has one buffer (nccl's in-place form), so Open MPI's"
echo "# broadcast here is n/a."
bandwidth_table 8
echo
echo "# Latency, us (time column), in place, median [min-max] of the launches (each the mean of"
echo "# $LAT_ITERS operations); hora/mpi below 1: hora is faster"
latency_table 10
echo
echo "# Latency out of place, the same"
latency_table 6

# summary.tsv: in-place figures only (every library has them; MPI_Bcast has
# no out-of-place form), and the limits.
tsv="$results/summary.tsv"
tsv_start "$tsv"
for tool in hora horawin mpi; do
  label=$tool
  [[ $tool != horawin ]] || label="hora-win"
  for collective in "${collectives[@]}"; do
    while read -r size; do
      [[ -z $size ]] || tsv_row "$tsv" result "$label" "$collective" "$size" busbw_GBps \
        "$(stats "$tool" "$collective" "$size" 12)"
    done <<<"$(sizes_of "$collective")"
  done
  for collective in "${latency_collectives[@]}"; do
    while read -r size; do
      [[ -z $size ]] || tsv_row "$tsv" result "$label" "$collective" "$size" time_us \
        "$(stats "$tool" "lat_$collective" "$size" 10)"
    done <<<"$(sizes_of "lat_$collective")"
  done
done
tsv_row "$tsv" limit memcpy-1-thread - - GBps "$copy_1t"
tsv_row "$tsv" limit memcpy-2-threads - - GBps "$copy_2t"
tsv_row "$tsv" limit add-2-threads - - GBps "$add_2t"
tsv_row "$tsv" limit tcp-both-directions - - GBps "$tcp_both"
tsv_row "$tsv" limit core-to-core-copy - - GBps "$c2c_copy"
tsv_row "$tsv" limit core-to-core-latency - - ns "$c2c_latency"

echo
echo "# wrong elements over every table: hora $(wrong_in "$results"/hora-*.txt)," \
  "hora-win $(wrong_in "$results"/horawin-*.txt), mpi $(wrong_in "$results"/mpi-*.txt)"
finish_report "$tsv" "$results" "$have_hora" \
  "Shared memory, 2 ranks, float; median and range of $REPEATS launches; $started_at" "${failed[@]}"
echo "# total run time: $((SECONDS - started)) s"
exit_with_verdict "$(wrong_in "$results"/hora-*.txt "$results"/horawin-*.txt "$results"/mpi-*.txt)" "${failed[@]}"
