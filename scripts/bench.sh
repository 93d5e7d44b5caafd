#!/usr/bin/env bash
# The main job: a bus-bandwidth run of every collective on this machine,
# one process per rank (default 2 ranks; ranks of one host talk through
# shared memory), with results checked against reference values. Usage: scripts/bench.sh [nranks] [maxbytes]
set -euo pipefail
# Host buffers, even where a GPU is usable: this is the host path, against
# which Gloo and Open MPI are compared (scripts/gpu-check.sh measures the GPU).
export HORA_PERF_MEMORY=host
cd "$(dirname "$0")/.."
build_dir=${HORA_BUILD_DIR:-build}
nranks=${1:-2}
max=${2:-256M}
run="$build_dir/tools/hora-run/hora-run"
perf="$build_dir/bench/perf/hora-perf"
for collective in all_reduce reduce_scatter all_gather broadcast reduce sendrecv alltoall gather scatter; do
  echo "### $collective, $nranks ranks"
  "$run" -n "$nranks" "$perf" "$collective" -b 8 -e "$max" -f 8 -w 2 -n 10 -c 1
done
