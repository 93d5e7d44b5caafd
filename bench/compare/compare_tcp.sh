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
#   - MPI_Allreduce with Open MPI's TCP transport on lo only;
#   - MPI_Allreduce with Open MPI's shared memory (vader), for reference.
# and prints every table followed by a summary.
#
# Knobs (environment): ITERS and WARMUP for the 16 MiB..256 MiB sizes
# (default 20 and 5), LAT_ITERS and LAT_WARMUP for the 8-byte latency
# (default 1000 and 100). Results stay in <builddir>/bench/compare/results.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
builddir=$(realpath -m "${1:-$repo/build}")
src="$repo/bench/compare"
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

note() { printf '%s\n' "$*" >&2; }

# --- 1. The peers' packages -------------------------------------------------
missing=()
[[ -f /usr/include/gloo/allreduce.h ]] || missing+=(libgloo-dev)
command -v mpirun >/dev/null || missing+=(openmpi-bin)
command -v mpicxx >/dev/null || missing+=(libopenmpi-dev)
if ((${#missing[@]})); then
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    note "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  else
    note "missing packages: ${missing[*]}"
    note "install them first, e.g.: sudo apt-get install ${missing[*]}"
    exit 1
  fi
fi

# --- 2. Build the peers (only when a source is newer than the binary) ------
mkdir -p "$out" "$results"
build() {  # build <binary> <source> <compiler> [flags and libraries...]
  local binary="$out/$1" source="$src/$2" compiler=$3
  shift 3
  if [[ ! -x $binary || $source -nt $binary || $src/bench_table.h -nt $binary ]]; then
    note "building $binary"
    "$compiler" -O2 -std=c++17 -o "$binary" "$source" "$@"
  fi
}
build tcp_stream tcp_stream.cc g++ -pthread
build gloo_allreduce gloo_allreduce.cc g++ -lgloo -pthread
# OMPI_SKIP_MPICXX: the program uses the C API; skip the deprecated C++ one.
build mpi_allreduce mpi_allreduce.cc mpicxx -DOMPI_SKIP_MPICXX

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

run() {  # run <name> <command...>: prints and keeps the output in results/
  local name=$1
  shift
  note "== $name: $*"
  local step_start=$SECONDS
  if ! timeout "$STEP_TIMEOUT" "$@" >"$results/$name.txt" 2>"$results/$name.err"; then
    note "   $name failed or timed out; its errors:"
    sed 's/^/   /' "$results/$name.err" >&2
    : >"$results/$name.txt"
  fi
  note "   $((SECONDS - step_start)) s"
}

# Every rank needs a core of its own: anything else running on the machine
# shows up directly in the figures, so the report states the load.
load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before=$(load)
if awk -v l="${load_before%% *}" 'BEGIN { exit !(l > 0.5) }'; then
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
run mpi-tcp "${mpi_tcp[@]}" "$out/mpi_allreduce" "${big[@]}"
run mpi-tcp-lat "${mpi_tcp[@]}" "$out/mpi_allreduce" "${small[@]}"
run mpi-shm "${mpi_shm[@]}" "$out/mpi_allreduce" "${big[@]}"
run mpi-shm-lat "${mpi_shm[@]}" "$out/mpi_allreduce" "${small[@]}"

# --- 4. Report ---------------------------------------------------------------
echo "# All-reduce, float sum, 2 ranks on $(hostname), $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# sizes 16M..256M: -n $ITERS -w $WARMUP; 8 B: -n $LAT_ITERS -w $LAT_WARMUP"
echo "# load average (1, 5, 15 min) before: $load_before, after: $(load)"
for file in "$results"/*.txt; do
  [[ -s $file ]] || continue
  echo
  echo "## $(basename "$file" .txt)"
  cat "$file"
done

# Column of a result table for one size: 10 = in-place time (us),
# 12 = in-place busbw (GB/s). Empty when absent.
column_of() {  # column_of <name> <size> <field>
  local file="$results/$1.txt"
  [[ -s $file ]] || return 0
  awk -v size="$2" -v field="$3" '$1 !~ /^#/ && $1 == size { print $field; exit }' "$file"
}
# The best of Gloo's variants for one size, and which one it was.
best_gloo() {  # best_gloo <size> -> "busbw variant"
  local algorithm value best="" best_name=""
  for algorithm in allreduce_ring ring_chunked ring; do
    value=$(column_of "gloo-$algorithm" "$1" 12)
    [[ -n $value ]] || continue
    if [[ -z $best ]] || awk -v a="$value" -v b="$best" 'BEGIN { exit !(a > b) }'; then
      best=$value best_name=$algorithm
    fi
  done
  echo "$best $best_name"
}
stream_best=$(awk '/one direction/ { print $6; exit }' "$results/limit.txt" 2>/dev/null || true)
stream_both=$(awk '/both directions/ { print $6; exit }' "$results/limit.txt" 2>/dev/null || true)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
show() { [[ -n $1 ]] && echo "$1" || echo "n/a"; }

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
  hora=$(column_of hora "$size" 12)
  read -r gloo gloo_name <<<"$(best_gloo "$size")" || true
  mpi=$(column_of mpi-tcp "$size" 12)
  shm=$(column_of mpi-shm "$size" 12)
  printf '%12s %8s %8s %8s %8s %10s %10s %8s %8s %8s  %s\n' "$size" "$(show "$hora")" \
    "$(show "$gloo")" "$(show "$mpi")" "$(show "$shm")" "$(ratio "$hora" "$gloo")" \
    "$(ratio "$hora" "$mpi")" "$(ratio "$hora" "$stream_best")" \
    "$(ratio "$gloo" "$stream_best")" "$(ratio "$mpi" "$stream_best")" "$(show "$gloo_name")"
done

echo
echo "# 8-byte all-reduce latency, in-place, mean of $LAT_ITERS (us)"
printf '%-26s %10s\n' hora "$(show "$(column_of hora-lat 8 10)")"
for algorithm in allreduce_ring ring_chunked ring; do
  printf '%-26s %10s\n' "gloo $algorithm" "$(show "$(column_of "gloo-$algorithm-lat" 8 10)")"
done
printf '%-26s %10s\n' mpi-tcp "$(show "$(column_of mpi-tcp-lat 8 10)")"
printf '%-26s %10s\n' "mpi-shm (reference)" "$(show "$(column_of mpi-shm-lat 8 10)")"
hora_lat=$(column_of hora-lat 8 10)
mpi_lat=$(column_of mpi-tcp-lat 8 10)
printf '%-26s %10s\n' "hora/mpi-tcp" "$(ratio "$hora_lat" "$mpi_lat")"
echo
echo "# total run time: $((SECONDS - started)) s"
