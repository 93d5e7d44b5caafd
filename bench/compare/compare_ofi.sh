#!/usr/bin/env bash
# hora's ofi transport (the RDMA credit protocol on libfabric) against
# hora's own tcp transport, on one machine: 2 ranks over loopback, every
# collective the ring runs. Function only: with libfabric's tcp provider
# the ofi transport moves its bytes through the same kernel sockets as
# hora's tcp, plus libfabric's and the protocol's copies, so it shows what
# the protocol costs, not what an RDMA NIC would carry.
#
#   bench/compare/compare_ofi.sh [builddir]      (builddir defaults to ./build)
#
# Each round runs tcp_stream (the loopback limits), then every collective
# once over each transport, alternating which goes first round by round.
# It prints every table, then per collective and size the median [min-max]
# of the out-of-place busbw over the launches and the ratio of the medians.
#
# Knobs (environment): COLLECTIVES (default "all_reduce all_gather
# reduce_scatter broadcast"), MIN_BYTES and MAX_BYTES (default 1M and 256M),
# ITERS and WARMUP (default 5 and 2), REPEATS (default 5), STREAM_BYTES
# (default 1073741824), STEP_TIMEOUT (seconds a run may take, default 600),
# OFI_PROVIDER (default tcp). Results stay in <builddir>/bench/compare/results-ofi.
# Exit status, once the whole report is printed: 1 when any run failed,
# timed out or reported wrong elements (a last line says how many), else 0.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

builddir=$(realpath -m "${1:-$repo/build}")
out="$builddir/bench/compare"
results="$out/results-ofi"
COLLECTIVES=${COLLECTIVES:-all_reduce all_gather reduce_scatter broadcast}
MIN_BYTES=${MIN_BYTES:-1M}
MAX_BYTES=${MAX_BYTES:-256M}
ITERS=${ITERS:-5}
WARMUP=${WARMUP:-2}
REPEATS=${REPEATS:-5}
STREAM_BYTES=${STREAM_BYTES:-1073741824}
STEP_TIMEOUT=${STEP_TIMEOUT:-600}
OFI_PROVIDER=${OFI_PROVIDER:-tcp}
read -ra collectives <<<"$COLLECTIVES"

if ! [[ $REPEATS =~ ^[1-9][0-9]*$ ]]; then
  note "REPEATS must be a whole number of at least 1, not '$REPEATS'"
  exit 2
fi
hora_perf="$builddir/bench/perf/hora-perf"
hora_run="$builddir/tools/hora-run/hora-run"
if [[ ! -x $hora_perf || ! -x $hora_run ]]; then
  note "hora-perf or hora-run is not built (meson compile -C $builddir)"
  exit 1
fi

mkdir -p "$out" "$results"
build_program "$out/tcp_stream" "$src/tcp_stream.cc" g++ -O2 -pthread

failed=()
run() { run_step "$STEP_TIMEOUT" "$results" "$@" || { : >"$results/$1.txt"; failed+=("$1"); }; }

transports=(tcp ofi)
# launch <transport> <collective> <repeat>: one hora-perf launch of 2 ranks.
launch() {
  run "$1-$2-r$3" env HORA_TRANSPORT="$1" HORA_OFI_PROVIDER="$OFI_PROVIDER" "$hora_run" -n 2 "$hora_perf" "$2" \
    -b "$MIN_BYTES" -e "$MAX_BYTES" -f 2 -n "$ITERS" -w "$WARMUP" -c 1
}

rm -f "$results"/*.txt "$results"/*.err "$results"/summary.tsv
started_at=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load_before=$(load_average)
for ((repeat = 1; repeat <= REPEATS; repeat++)); do
  run "limit-r$repeat" "$out/tcp_stream" -s "$STREAM_BYTES"
  for collective in "${collectives[@]}"; do
    if ((repeat % 2)); then order=(0 1); else order=(1 0); fi
    for i in "${order[@]}"; do launch "${transports[i]}" "$collective" "$repeat"; done
  done
done

echo "# hora over ofi (libfabric provider $OFI_PROVIDER) and over its own tcp, 2 ranks on $(hostname),"
echo "# $(nproc) cores, started $started_at; sizes $MIN_BYTES..$MAX_BYTES, -n $ITERS -w $WARMUP"
echo "# load average (1, 5, 15 min) before: $load_before, after: $(load_average)"
echo "# $REPEATS round(s), the two transports alternating which runs first"
print_tables "$results"/limit-r*.txt "$results"/tcp-*-r*.txt "$results"/ofi-*-r*.txt

stats() { columns_of "$3" 8 "$results/$1-$2"-r*.txt | spread; }  # stats <transport> <collective> <size>
limit_figures() {
  local file
  for file in "$results"/limit-r*.txt; do summary_figure "$file" tcp "$1"; done | spread
}
stream_both=$(limit_figures both_directions)
echo
echo "# Limit: loopback TCP, both directions at once, $(show_spread "$stream_both") GB/s per direction"
echo "# (the ceiling of a 2-rank ring over sockets, which both transports here use)."
echo
echo "# Summary: out-of-place busbw (GB/s), median [min-max] of the launches. #wrong: $(wrong_in "$results"/*-r*.txt)"
printf '%-15s %12s  %-24s %-24s %8s %8s\n' collective size tcp ofi ofi/tcp ofi/lim
tsv="$results/summary.tsv"
tsv_start "$tsv"
for collective in "${collectives[@]}"; do
  while read -r size; do
    [[ -n $size ]] || continue
    tcp=$(stats tcp "$collective" "$size")
    ofi=$(stats ofi "$collective" "$size")
    printf '%-15s %12s  %-24s %-24s %8s %8s\n' "$collective" "$size" "$(show_spread "$tcp")" \
      "$(show_spread "$ofi")" "$(ratio "$(median_of "$ofi")" "$(median_of "$tcp")")" \
      "$(ratio "$(median_of "$ofi")" "$(median_of "$stream_both")")"
    tsv_row "$tsv" result hora-tcp "$collective" "$size" busbw_GBps "$tcp"
    tsv_row "$tsv" result hora-ofi "$collective" "$size" busbw_GBps "$ofi"
  done <<<"$(sizes_in "$results/tcp-$collective"-r*.txt "$results/ofi-$collective"-r*.txt)"
done
tsv_row "$tsv" limit tcp-both-directions - - GBps "$stream_both"
echo
finish_report "$tsv" "$results" 1 "hora: ofi (libfabric $OFI_PROVIDER) against tcp, 2 ranks, loopback" "${failed[@]}"
exit_with_verdict "$(wrong_in "$results"/*-r*.txt)" "${failed[@]}"
