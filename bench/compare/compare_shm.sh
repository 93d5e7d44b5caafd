#!/usr/bin/env bash
# Side-by-side collectives through shared memory on one machine: hora's shm
# transport against Open MPI's default path between ranks of one host, and
# both against what the machine's memory can carry.
#
#   bench/compare/compare_shm.sh [builddir]      (builddir defaults to ./build)
#
# It builds mpi_collectives and mem_bandwidth into <builddir>/bench/compare
# with the system compilers, then runs, each with 2 ranks on this machine:
#   - mem_bandwidth: memcpy and float a += b, 1 thread and 2 at once;
#   - for all_reduce, all_gather, reduce_scatter and broadcast:
#       HORA_TRANSPORT=shm hora-run -n 2 hora-perf <collective> ...
#       mpirun -np 2 mpi_collectives <collective> ...   (no --mca options:
#       Open MPI's own choice of transport and algorithm)
#       and hora-perf ... -R 2 (buffers from ncclMemAlloc registered as
#       windows: zero copy between the ranks),
#     alternately, REPEATS times each;
#   - all_reduce and all_gather of 8 bytes to 64 KiB (x2 steps), for
#     latency, REPEATS times each, alternately;
# and prints every table, then a summary of the medians.
#
# Knobs (environment): MIN_BYTES and MAX_BYTES (default 16M and 256M, steps
# of x2), ITERS and WARMUP for them (default 20 and 5), LAT_ITERS and
# LAT_WARMUP for the latency sizes (default 5000 and 500), LAT_MAX_BYTES
# (default 64K), REPEATS (default 1),
# MEM_BYTES (mem_bandwidth's buffer size, default 256M), STEP_TIMEOUT
# (seconds any one run may take, default 600). Results stay in
# <builddir>/bench/compare/results-shm.
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
REPEATS=${REPEATS:-1}
MEM_BYTES=${MEM_BYTES:-256M}
# No single run may hang the comparison.
STEP_TIMEOUT=${STEP_TIMEOUT:-600}

collectives=(all_reduce all_gather reduce_scatter broadcast)
big=(-b "$MIN_BYTES" -e "$MAX_BYTES" -f 2 -d float -o sum -n "$ITERS" -w "$WARMUP")
small=(-b 8 -e "$LAT_MAX_BYTES" -f 2 -d float -o sum -n "$LAT_ITERS" -w "$LAT_WARMUP")
latency_collectives=(all_reduce all_gather)

if ! [[ $REPEATS =~ ^[1-9][0-9]*$ ]]; then
  note "REPEATS must be a whole number of at least 1, not '$REPEATS'"
  exit 2
fi

# --- 1. Open MPI ------------------------------------------------------------
require_packages mpirun:openmpi-bin mpicxx:libopenmpi-dev

# --- 2. Build the programs (only when a source is newer than the binary) ---
mkdir -p "$out" "$results"
# OMPI_SKIP_MPICXX: the program uses the C API; skip the deprecated C++ one.
build_program "$out/mpi_collectives" "$src/mpi_collectives.cc" mpicxx -O2 -DOMPI_SKIP_MPICXX
# -O3 vectorises the a += b loop, as a library's reduction kernel is.
build_program "$out/mem_bandwidth" "$src/mem_bandwidth.cc" g++ -O3 -pthread

# --- 3. Run everything -----------------------------------------------------
# Open MPI as a user gets it: no --mca options, so it picks its shared-memory
# transport and its collective algorithms itself.
mpirun_default=(mpirun --allow-run-as-root --oversubscribe -np 2)
hora_perf="$builddir/bench/perf/hora-perf"
hora_run="$builddir/tools/hora-run/hora-run"
have_hora=1
[[ -x $hora_perf && -x $hora_run ]] || have_hora=0

failed=()
# run <name> <command...>: a failed run keeps what it printed (a table with
# #wrong, or the rows before a time-out); the summary lists it as failed.
run() { run_step "$STEP_TIMEOUT" "$results" "$@" || failed+=("$1"); }

load_before=$(load_average)
# Every rank needs a core of its own: more than a quarter of the cores busy
# before the start means other work that will share them.
if is_greater "${load_before%% *}" "$(awk -v cores="$(nproc)" 'BEGIN { print cores / 4 }')"; then
  note "warning: load average is $load_before on $(nproc) cores; other work on this machine will distort the figures"
fi

rm -f "$results"/*.txt "$results"/*.err
started=$SECONDS
started_at=$(date -u '+%Y-%m-%d %H:%M:%S UTC')

run memory "$out/mem_bandwidth" -s "$MEM_BYTES"
if ((!have_hora)); then
  note "== hora: skipped, $hora_perf or $hora_run is not built (ninja -C $builddir)"
fi
# Each pair back to back, hora then MPI, REPEATS times: the machine's speed
# drifts over minutes, and alternating gives both the same conditions.
for collective in "${collectives[@]}"; do
  for ((repeat = 1; repeat <= REPEATS; repeat++)); do
    if ((have_hora)); then
      run "hora-$collective-r$repeat" env HORA_TRANSPORT=shm "$hora_run" -n 2 "$hora_perf" \
        "$collective" "${big[@]}"
      # The same on windows (ncclMemAlloc + ncclCommWindowRegister): zero copy
      # between the ranks.
      run "horawin-$collective-r$repeat" env HORA_TRANSPORT=shm "$hora_run" -n 2 "$hora_perf" \
        "$collective" "${big[@]}" -R 2
    fi
    run "mpi-$collective-r$repeat" "${mpirun_default[@]}" "$out/mpi_collectives" "$collective" "${big[@]}"
  done
done
for collective in "${latency_collectives[@]}"; do
  for ((repeat = 1; repeat <= REPEATS; repeat++)); do
    if ((have_hora)); then
      run "hora-lat_$collective-r$repeat" env HORA_TRANSPORT=shm "$hora_run" -n 2 "$hora_perf" \
        "$collective" "${small[@]}"
    fi
    run "mpi-lat_$collective-r$repeat" "${mpirun_default[@]}" "$out/mpi_collectives" "$collective" \
      "${small[@]}"
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
echo "# latency:  ${latency_collectives[*]} ${small[*]}; every pair run $REPEATS time(s), alternately"
print_tables "$results/memory.txt" "$results"/hora-*.txt "$results"/horawin-*.txt "$results"/mpi-*.txt

# The median over the repeats of one column, or empty.
median_of() {  # median_of <tool> <collective-or-lat> <size> <field>
  local file
  for file in "$results/$1-$2"-r*.txt; do
    column_of "$file" "$3" "$4"
  done | sort -g | awk '{ v[NR] = $1 }
    END { if (NR == 0) exit
          if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# Every size that appears in a table of one collective, in order.
sizes_of() {  # sizes_of <collective>
  cat "$results"/*-"$1"-r*.txt 2>/dev/null | awk '$1 ~ /^[0-9]+$/ { print $1 }' | sort -un
}
# Wrong elements over every table of one tool (#wrong columns 9 and 13).
wrong_of() {  # wrong_of <tool>
  cat "$results/$1"-*.txt 2>/dev/null |
    awk '$1 ~ /^[0-9]+$/ { for (f = 9; f <= 13; f += 4) if ($f ~ /^[0-9]+$/) { w += $f; n++ } }
         END { if (n) print w + 0; else print "n/a" }'
}
memory_figure() {  # memory_figure <key>: a GB/s figure of mem_bandwidth's summary line
  awk -v key="$1" '/^# memory:/ { for (i = 1; i < NF; i++) if ($i == key) { print $(i + 1); exit } }' \
    "$results/memory.txt" 2>/dev/null || true
}
copy_1t=$(memory_figure copy_1t)
copy_2t=$(memory_figure copy_2t)
add_2t=$(memory_figure add_2t)

# One row per collective and size: <tool>'s medians against Open MPI's, in
# place and out of place, and both as fractions of the memcpy rate.
summary_table() {  # summary_table <tool> <label>
  local collective size tool_ip mpi_ip tool_oop mpi_oop
  printf '%-14s %10s %8s %8s %8s %8s %8s   %8s %8s %8s\n' collective size "$2-ip" mpi-ip "$2/mpi" \
    "$2/mem" mpi/mem "$2-oop" mpi-oop "$2/mpi"
  for collective in "${collectives[@]}"; do
    while read -r size; do
      [[ -n $size ]] || continue
      tool_ip=$(median_of "$1" "$collective" "$size" 12)
      mpi_ip=$(median_of mpi "$collective" "$size" 12)
      tool_oop=$(median_of "$1" "$collective" "$size" 8)
      mpi_oop=$(median_of mpi "$collective" "$size" 8)
      printf '%-14s %10s %8s %8s %8s %8s %8s   %8s %8s %8s\n' "$collective" "$size" \
        "$(show "$tool_ip")" "$(show "$mpi_ip")" "$(ratio "$tool_ip" "$mpi_ip")" \
        "$(ratio "$tool_ip" "$copy_2t")" "$(ratio "$mpi_ip" "$copy_2t")" \
        "$(show "$tool_oop")" "$(show "$mpi_oop")" "$(ratio "$tool_oop" "$mpi_oop")"
    done <<<"$(sizes_of "$collective")"
  done
}

echo
echo "# Summary: busbw in GB/s (nccl-tests' factors), median of $REPEATS run(s) each."
echo "# ip = in place: MPI_IN_PLACE against nccl's in-place call; broadcast has one buffer"
echo "# in MPI_Bcast (nccl's in-place form), so its out-of-place MPI column is n/a."
echo "# oop = out of place. hora/mpi above 1: hora is faster."
echo "# mem = memcpy with both ranks copying at once, bytes copied per second by both together:"
echo "# $(show "$copy_2t") GB/s (1 thread alone $(show "$copy_1t") GB/s; a += b with 2 threads $(show "$add_2t") GB/s)."
summary_table hora hora

echo
echo "# On windows (hora-perf -R 2: ncclMemAlloc buffers registered with ncclCommWindowRegister;"
echo "# the ranks read and write each other's buffers directly). Open MPI's figures are those"
echo "# above (its buffers are plain)."
summary_table horawin win

echo
echo "# Latency, us (time column), median of $REPEATS run(s) of the mean of $LAT_ITERS; hora/mpi below 1: hora is faster"
printf '%-14s %8s %8s %8s %8s   %8s %8s %8s\n' collective size hora-ip mpi-ip hora/mpi hora-oop mpi-oop hora/mpi
for collective in "${latency_collectives[@]}"; do
  while read -r size; do
    [[ -n $size ]] || continue
    hora_ip=$(median_of hora "lat_$collective" "$size" 10)
    mpi_ip=$(median_of mpi "lat_$collective" "$size" 10)
    hora_oop=$(median_of hora "lat_$collective" "$size" 6)
    mpi_oop=$(median_of mpi "lat_$collective" "$size" 6)
    printf '%-14s %8s %8s %8s %8s   %8s %8s %8s\n' "$collective" "$size" "$(show "$hora_ip")" \
      "$(show "$mpi_ip")" "$(ratio "$hora_ip" "$mpi_ip")" "$(show "$hora_oop")" "$(show "$mpi_oop")" \
      "$(ratio "$hora_oop" "$mpi_oop")"
  done <<<"$(sizes_of "lat_$collective")"
done
echo
echo "# wrong elements over every table: hora $(wrong_of hora), hora-win $(wrong_of horawin), mpi $(wrong_of mpi)"
if ((${#failed[@]})); then
  echo "# FAILED or timed out (errors in $results/<name>.err): ${failed[*]}"
fi
if ((!have_hora)); then
  echo "# hora was not run: $hora_perf or $hora_run is not built"
fi
echo "# total run time: $((SECONDS - started)) s"
