#!/usr/bin/env bash
# Side-by-side all-reduce over TCP on one machine: hora against Gloo and
# Open MPI, and all three against what the machine's loopback can carry.
#
#   bench/compare/compare_tcp.sh [builddir]      (builddir defaults to ./build)
#
# It builds the peer programs of this folder into <builddir>/bench/compare
# with the system compilers (-O2, against Debian's libgloo-dev and Open MPI),
# then runs, one after the other, each with 2 ranks on this machine:
#   - tcp_stream: memcpy and loopback TCP stream bandwidth (the limit);
#   - hora-perf all_reduce over TCP (skipped if the build dir has no hora-perf);
#   - Gloo's ring all-reduces over TCP on 127.0.0.1;
#   - MPI_Allreduce (mpi_collectives all_reduce) with Open MPI's TCP
#     transport on lo only;
#   - the same with Open MPI's shared memory (vader), for reference.
# and prints every table followed by a summary.
#
# Knobs (environment): ITERS and WARMUP for the 16 MiB..256 MiB sizes
# (default 20 and 5), LAT_ITERS and LAT_WARMUP for the 8-byte latency
# (default 1000 and 100). Results stay in <builddir>/bench/compare/results.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

builddir=$(realpath -m "${1:-$repo/build}")
out="$builddir/bench/compare"
results="$out/results"
ITERS=${ITERS:-20}
WARMUP=${WARMUP:-5}
LAT_ITERS=${LAT_ITERS:-1000}
LAT_WARMUP=${LAT_WARMUP:-100}
# No single run may hang the comparison.
STEP_TIMEOUT=${STEP_TIMEOUT:-600}

big=(-b 16M -e 256M -f 2 -d float -o sum -n "$ITERS" -w "$WARMUP" -c 1)
small=(-b 8 -e 8 -d float -o sum -n "$LAT_ITERS" -w "$LAT_WARMUP" -c 1)
sizes=(16777216 33554432 67108864 134217728 268435456)

# --- 1. The peers' packages -------------------------------------------------
require_packages /usr/include/gloo/allreduce.h:libgloo-dev mpirun:openmpi-bin \
  mpicxx:libopenmpi-dev

# --- 2. Build the peers (only when a source is newer than the binary) ------
mkdir -p "$out" "$results"
build_program "$out/tcp_stream" "$src/tcp_stream.cc" g++ -O2 -pthread
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

# run <name> <command...>: a failed run leaves an empty table, so the
# summary reads n/a for it rather than figures of a broken run.
run() { run_step "$STEP_TIMEOUT" "$results" "$@" || : >"$results/$1.txt"; }

load_before=$(load_average)
if is_greater "${load_before%% *}" 0.5; then
  note "warning: load average is $load_before; other work on this machine will distort the figures"
fi

hora_perf="$builddir/bench/perf/hora-perf"
hora_run="$builddir/tools/hora-run/hora-run"
rm -f "$results"/*.txt "$results"/*.err
started=$SECONDS

run limit "$out/tcp_stream"
if [[ -x $hora_perf && -x $hora_run ]]; then
  run hora env HORA_TRANSPORT=tcp "$hora_run" -n 2 "$hora_perf" all_reduce "${big[@]}"
  run hora-lat env HORA_TRANSPORT=tcp "$hora_run" -n 2 "$hora_perf" all_reduce "${small[@]}"
else
  note "== hora: skipped, $hora_perf or $hora_run is not built (ninja -C $builddir)"
fi
for algorithm in allreduce_ring ring_chunked ring; do
  run "gloo-$algorithm" "$out/gloo_allreduce" -a "$algorithm" "${big[@]}"
  run "gloo-$algorithm-lat" "$out/gloo_allreduce" -a "$algorithm" "${small[@]}"
done
run mpi-tcp "${mpi_tcp[@]}" "$out/mpi_collectives" all_reduce "${big[@]}"
run mpi-tcp-lat "${mpi_tcp[@]}" "$out/mpi_collectives" all_reduce "${small[@]}"
run mpi-shm "${mpi_shm[@]}" "$out/mpi_collectives" all_reduce "${big[@]}"
run mpi-shm-lat "${mpi_shm[@]}" "$out/mpi_collectives" all_reduce "${small[@]}"

# --- 4. Report ---------------------------------------------------------------
echo "# All-reduce, float sum, 2 ranks on $(hostname), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# sizes 16M..256M: -n $ITERS -w $WARMUP; 8 B: -n $LAT_ITERS -w $LAT_WARMUP"
echo "# load average (1, 5, 15 min) before: $load_before, after: $(load_average)"
print_tables "$results"/*.txt

# In-place columns of the result table <name> for one size: 10 = time (us),
# 12 = busbw (GB/s). Empty when absent.
table_column() { column_of "$results/$1.txt" "$2" "$3"; }  # <name> <size> <field>
# The best of Gloo's variants for one size, and which one it was.
best_gloo() {  # best_gloo <size> -> "busbw variant"
  local algorithm value best="" best_name=""
  for algorithm in allreduce_ring ring_chunked ring; do
    value=$(table_column "gloo-$algorithm" "$1" 12)
    [[ -n $value ]] || continue
    if [[ -z $best ]] || is_greater "$value" "$best"; then
      best=$value best_name=$algorithm
    fi
  done
  echo "$best $best_name"
}
stream_best=$(awk '/one direction/ { print $6; exit }' "$results/limit.txt" 2>/dev/null || true)
stream_both=$(awk '/both directions/ { print $6; exit }' "$results/limit.txt" 2>/dev/null || true)

echo
connected=$(grep -c 'now connected to 127.0.0.1' "$results/mpi-tcp.err" 2>/dev/null || true)
echo "# Open MPI over TCP: $(show "$connected") rank(s) logged a TCP connection over 127.0.0.1 (expect 2)"
echo "# Summary: in-place busbw (GB/s); every peer supports in-place, Gloo's classic"
echo "# algorithms only that. Gloo = its best variant at that size. limit = best"
echo "# one-direction loopback stream, $(show "$stream_best") GB/s (both directions at once:"
echo "# $(show "$stream_both") GB/s per direction, the ceiling for a 2-rank ring)."
printf '%12s %8s %8s %8s %8s %10s %10s %8s %8s %8s  %s\n' size hora gloo mpi-tcp mpi-shm \
  hora/gloo hora/mpi hora/lim gloo/lim mpi/lim "gloo variant"
for size in "${sizes[@]}"; do
  hora=$(table_column hora "$size" 12)
  read -r gloo gloo_name <<<"$(best_gloo "$size")" || true
  mpi=$(table_column mpi-tcp "$size" 12)
  shm=$(table_column mpi-shm "$size" 12)
  printf '%12s %8s %8s %8s %8s %10s %10s %8s %8s %8s  %s\n' "$size" "$(show "$hora")" \
    "$(show "$gloo")" "$(show "$mpi")" "$(show "$shm")" "$(ratio "$hora" "$gloo")" \
    "$(ratio "$hora" "$mpi")" "$(ratio "$hora" "$stream_best")" \
    "$(ratio "$gloo" "$stream_best")" "$(ratio "$mpi" "$stream_best")" "$(show "$gloo_name")"
done

echo
echo "# 8-byte all-reduce latency, in-place, mean of $LAT_ITERS (us)"
printf '%-26s %10s\n' hora "$(show "$(table_column hora-lat 8 10)")"
for algorithm in allreduce_ring ring_chunked ring; do
  printf '%-26s %10s\n' "gloo $algorithm" "$(show "$(table_column "gloo-$algorithm-lat" 8 10)")"
done
printf '%-26s %10s\n' mpi-tcp "$(show "$(table_column mpi-tcp-lat 8 10)")"
printf '%-26s %10s\n' "mpi-shm (reference)" "$(show "$(table_column mpi-shm-lat 8 10)")"
hora_lat=$(table_column hora-lat 8 10)
mpi_lat=$(table_column mpi-tcp-lat 8 10)
printf '%-26s %10s\n' "hora/mpi-tcp" "$(ratio "$hora_lat" "$mpi_lat")"
echo
echo "# total run time: $((SECONDS - started)) s"
