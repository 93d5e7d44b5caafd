#!/usr/bin/env bash
# The first run of hora's RDMA transports on real RDMA NICs (InfiniBand or
# RoCE): the NIC's own figures as the baseline, then hora over them.
#
#   scripts/ib-check.sh [--peer HOST | --device2 DEV2] [--device DEV] [builddir]
#
#   --peer HOST     the second host (passwordless ssh; this repository and its
#                   build at the same path there): rank 0 here, rank 1 there.
#   --device2 DEV2  both ranks here, rank 0 on DEV and rank 1 on DEV2: two
#                   RDMA devices (NICs) of this host on one fabric, so that
#                   the bytes cross the fabric's switch (port 1 of each).
#                   With neither, both ranks run here on DEV's loopback (the
#                   NIC turns the traffic around).
#   --device DEV    the verbs device (default: the first with an ACTIVE port)
#
# Steps:
#   1. the devices and ports (ibv_devinfo), and the one used;
#   2. baseline: perftest's ib_write_bw (64 MiB messages) and ib_write_lat
#      (8 bytes) between the two ranks' places;
#   3. hora-perf, 2 ranks, for all_reduce, all_gather, reduce_scatter and
#      broadcast, 8 B to 256 MiB, REPEATS launches (default 5) of each
#      transport alternating: `ofi` on libfabric's verbs provider, and `ib`
#      (hora's verbs device; until it is in use, hora says so and tcp
#      carries the pair, which this script reports rather than measures);
#   4. the report: median busbw at 64 MiB and more as a fraction of
#      ib_write_bw, each row marked against the goal (at least 0.9), and the
#      8-byte latency against ib_write_lat; NVIDIA's nccl-tests for the same
#      four collectives beside them where its programs and GPUs are found.
# Exits 77 ("skipped") where there is no RDMA device with an ACTIVE port,
# or perftest is missing; 1 when a step fails, a launch gave no figure, or
# neither transport was in use; 3 when everything ran but a transport in
# use fell short of the goal; 0 otherwise.
set -uo pipefail
readonly SKIPPED=77
repo=$(cd "$(dirname "$0")/.." && pwd)
peer="" device="" device2="" builddir=""
while (($#)); do
  case $1 in
    --peer) peer=${2:?--peer needs a host}; shift 2 ;;
    --device) device=${2:?--device needs a device}; shift 2 ;;
    --device2) device2=${2:?--device2 needs a device}; shift 2 ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) builddir=$1; shift ;;
  esac
done
[[ -n $peer && -n $device2 ]] && { echo "FAIL: --peer and --device2 exclude each other" >&2; exit 1; }
builddir=$(realpath -m "${builddir:-$repo/build}")
REPEATS=${REPEATS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

skip() { echo "SKIPPED: $*"; exit "$SKIPPED"; }
die() { echo "FAIL: $*" >&2; exit 1; }

# --- 1. Devices --------------------------------------------------------------
command -v ibv_devinfo >/dev/null || skip "ibv_devinfo is missing (Debian package ibverbs-utils)"
command -v ib_write_bw >/dev/null && command -v ib_write_lat >/dev/null ||
  skip "perftest's ib_write_bw / ib_write_lat are missing (Debian package perftest)"
ibv_devinfo >"$work/devinfo" 2>&1 || skip "ibv_devinfo lists no device: $(head -1 "$work/devinfo")"
# "hca_id: mlx5_0" ... "state: PORT_ACTIVE (4)": devices with an active port.
mapfile -t active < <(awk '/^hca_id:/ { dev = $2 } /state:/ && /PORT_ACTIVE/ { print dev }' "$work/devinfo" | sort -u)
((${#active[@]})) || skip "no RDMA device has an ACTIVE port (ibv_devinfo)"
[[ -n $device ]] || device=${active[0]}
printf '%s\n' "${active[@]}" | grep -qx -- "$device" || die "device $device has no ACTIVE port (active: ${active[*]})"
if [[ -n $device2 ]]; then
  printf '%s\n' "${active[@]}" | grep -qx -- "$device2" || die "device $device2 has no ACTIVE port (active: ${active[*]})"
fi
# The device of rank 1: on the peer, DEV; here, DEV2 or DEV itself.
device1=${device2:-$device}
link_layer_of() { awk -v d="$1" '/^hca_id:/ { on = ($2 == d) } on && /link_layer:/ { print $2; exit }' "$work/devinfo"; }
link_layer=$(link_layer_of "$device")
echo "# device $device ($link_layer); devices with an active port: ${active[*]}"
if [[ -n $device2 && $(link_layer_of "$device2") != "$link_layer" ]]; then
  die "$device ($link_layer) and $device2 ($(link_layer_of "$device2")) are not on one kind of fabric"
fi

# On RoCE perftest needs the GID to use (-x); without it, it takes index 0,
# a RoCE v1 or link-local one that routed fabrics drop. The one hora takes:
# NCCL_IB_GID_INDEX where set, else a RoCE v2 GID of the first port, IPv4
# mapped (::ffff:a.b.c.d) first. A peer host is taken to number its GIDs
# alike; a second device here is looked at itself.
# gid_args_of <dev>: perftest's -x for <dev>, or nothing.
gid_args_of() {
  [[ $link_layer == Ethernet ]] || return 0
  local gid_index=${HORA_IB_GID_INDEX:-${NCCL_IB_GID_INDEX:-}} port_dir=/sys/class/infiniband/$1/ports/1
  if [[ -z $gid_index ]]; then
    local type_file index gid
    for type_file in "$port_dir"/gid_attrs/types/*; do
      index=${type_file##*/}
      [[ $(cat "$type_file" 2>/dev/null) == "RoCE v2" ]] || continue
      gid=$(cat "$port_dir/gids/$index" 2>/dev/null)
      [[ -n $gid && $gid != 0000:0000:0000:0000:0000:0000:0000:0000 ]] || continue
      if [[ $gid == 0000:0000:0000:0000:0000:ffff:* ]]; then gid_index=$index; break; fi
      [[ -n $gid_index ]] || gid_index=$index
    done
  fi
  [[ -n $gid_index ]] && echo "-x $gid_index"
}
read -ra gid_args <<<"$(gid_args_of "$device")"
read -ra gid_args1 <<<"$(gid_args_of "$device1")"
[[ $link_layer == Ethernet ]] && echo "# RoCE: perftest uses GID ${gid_args[*]:-index 0 (none of RoCE v2 found)}"
if [[ -n $peer ]]; then
  echo "# ranks: here and on $peer"
elif [[ -n $device2 ]]; then
  echo "# ranks: both here, rank 0 on $device and rank 1 on $device2"
else
  echo "# ranks: both here, over the NIC's loopback"
fi

hora_run="$builddir/tools/hora-run/hora-run"
hora_perf="$builddir/bench/perf/hora-perf"
[[ -x $hora_run && -x $hora_perf ]] || die "hora-run or hora-perf is not built in $builddir (scripts/setup.sh)"

# on_peer <command...>: runs on the peer (or here).
on_peer() { if [[ -n $peer ]]; then ssh -o BatchMode=yes "$peer" "$@"; else "$@"; fi; }
server_addr=${peer:-localhost}  # where the perftest server runs

# --- 2. Baseline -----------------------------------------------------------------
# perf_pair <tool> <args...>: the server on the peer, the client here.
perf_pair() {
  local tool=$1
  shift
  on_peer "$tool" -d "$device1" "${gid_args1[@]}" "$@" >"$work/$tool.server" 2>&1 &
  local server=$!
  sleep 2
  "$tool" -d "$device" "${gid_args[@]}" "$@" "$server_addr" >"$work/$tool.client" 2>&1
  local rc=$?
  wait "$server"
  return $rc
}
perf_pair ib_write_bw -s 67108864 -n 200 --report_gbits || die "ib_write_bw failed: $(tail -3 "$work/ib_write_bw.client")"
# The result row: #bytes #iterations BW-peak BW-average MsgRate, in Gb/s.
wire_gbps=$(awk '$1 == 67108864 { print $4 / 8; exit }' "$work/ib_write_bw.client")
perf_pair ib_write_lat -s 8 -n 10000 || die "ib_write_lat failed: $(tail -3 "$work/ib_write_lat.client")"
# #bytes #iterations t_min t_max t_typical ...: the typical one-way time, us.
wire_lat_us=$(awk '$1 == 8 { print $5; exit }' "$work/ib_write_lat.client")
echo "# ib_write_bw 64 MiB: $wire_gbps GB/s; ib_write_lat 8 B: $wire_lat_us us"

# --- 3. hora ------------------------------------------------------------------------
collectives=(all_reduce all_gather reduce_scatter broadcast)
# rank_env <transport> <dev>: the environment of a rank on device <dev>.
rank_env() {
  echo HORA_DEBUG=INFO HORA_TRANSPORT="$1" HORA_OFI_PROVIDER=verbs HORA_OFI_DOMAIN="$2" NCCL_IB_HCA="=$2"
}
# hora_job <transport> <collective> <out>: 2 ranks, one per place.
hora_job() {
  local transport=$1 collective=$2 out=$3
  local env
  read -ra env <<<"$(rank_env "$transport" "$device")"
  local perf=("$hora_perf" "$collective" -b 8 -e 256M -f 4 -n 20 -w 5 -c 1)
  if [[ -n $peer || -n $device2 ]]; then
    # One hora-run per rank: on the peer, or here on the second device.
    local port=$((29500 + RANDOM % 1000)) master env1
    master=$([[ -n $peer ]] && hostname -f || echo localhost)
    read -ra env1 <<<"$(rank_env "$transport" "$device1")"
    on_peer env "${env1[@]}" "$hora_run" --nnodes 2 --node-rank 1 \
      --master-addr "$master" --master-port "$port" -n 1 "${perf[@]}" >"$out.rank1" 2>&1 &
    env "${env[@]}" "$hora_run" --nnodes 2 --node-rank 0 --master-addr "$master" --master-port "$port" \
      -n 1 "${perf[@]}" >"$out" 2>&1
    wait
  else
    env "${env[@]}" "$hora_run" -n 2 "${perf[@]}" >"$out" 2>&1
  fi
}
for ((r = 1; r <= REPEATS; r++)); do
  for collective in "${collectives[@]}"; do
    if ((r % 2)); then order=(ofi ib); else order=(ib ofi); fi
    for transport in "${order[@]}"; do
      hora_job "$transport" "$collective" "$work/$transport-$collective-r$r.txt" ||
        echo "# $transport $collective launch $r failed: $(grep -m1 -i 'error\|failed' "$work/$transport-$collective-r$r.txt")"
    done
  done
done

# --- 4. Report -----------------------------------------------------------------------
# carried_by <file>: the transport the ring used, from hora's INFO log.
carried_by() { grep -m1 -o 'to the next rank via [a-z0-9]*' "$1" | awk '{ print $NF }'; }
# median of a column (8: out-of-place busbw; 6: out-of-place time) at a size.
median() {
  local transport=$1 collective=$2 size=$3 field=$4
  cat "$work/$transport-$collective"-r*.txt 2>/dev/null | grep -E '^(\[rank 0\] )? *[0-9]+ ' |
    sed 's/^\[rank 0\] //' | awk -v s="$size" -v f="$field" '$1 == s { print $f }' | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
echo
short=()     # transports in use that fell short of the goal, with where
missing=()   # rows of a transport in use that have no figure (a failed launch)
measured=0   # transports in use
for transport in ofi ib; do
  via=$(carried_by "$work/$transport-all_reduce-r1.txt")
  if [[ $via != "$transport" ]]; then
    echo "# $transport: not in use here (the ring went via ${via:-?}); hora's log says why:"
    grep -m2 -E "$transport: |RDMA: " "$work/$transport-all_reduce-r1.txt" | sed 's/^/#   /'
    continue
  fi
  echo "# hora over $transport, out-of-place busbw GB/s (median of $REPEATS launches) and its fraction of ib_write_bw"
  for collective in "${collectives[@]}"; do
    for size in 67108864 268435456; do
      bw=$(median "$transport" "$collective" "$size" 8)
      # The verdict from the unrounded ratio (0.895 is short of 0.9).
      read -r fraction verdict < <(awk -v a="$bw" -v b="$wire_gbps" 'BEGIN {
        if (a == "" || b == "" || b == 0) { print "n/a not-measured"; exit }
        printf "%.2f %s\n", a / b, (a / b >= 0.9 ? "goal-met" : "below-the-goal-of-0.90") }')
      case $verdict in
        not-measured) missing+=("$transport/$collective/$size") ;;
        below-*) short+=("$transport/$collective/$size") ;;
      esac
      verdict=${verdict//-/ }
      printf '  %-15s %10s B  %8s GB/s  %s of the wire: %s\n' "$collective" "$size" "${bw:-n/a}" "$fraction" "$verdict"
    done
  done
  measured=$((measured + 1))
  lat=$(median "$transport" all_reduce 8 6)
  echo "  all_reduce 8 B: ${lat:-n/a} us (ib_write_lat: $wire_lat_us us one way)"
done
# NVIDIA's NCCL over the same NIC, where nccl-tests and GPUs are here: two
# GPUs of this host forced through the network (no P2P, no shared memory),
# or one GPU on each host through Open MPI's mpirun; the same four
# collectives, at the same sizes.
if command -v all_reduce_perf >/dev/null && command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  hcas=$device${device2:+,$device2}
  echo
  for collective in "${collectives[@]}"; do
    program=$(command -v "${collective}_perf") || { echo "# NVIDIA's NCCL: ${collective}_perf is missing"; continue; }
    if [[ -z $peer && $gpus -ge 2 ]]; then
      echo "# NVIDIA's NCCL, nccl-tests ${collective}_perf, 2 GPUs of this host through $hcas:"
      env NCCL_IB_HCA="=$hcas" NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "$program" -b 64M -e 256M -f 4 -g 2 2>&1 |
        grep -E '^ +[0-9]+ ' | sed 's/^/  /'
    elif [[ -n $peer ]] && command -v mpirun >/dev/null; then
      echo "# NVIDIA's NCCL, nccl-tests ${collective}_perf, one GPU here and one on $peer:"
      mpirun -np 2 -H "$(hostname -f),$peer" -x NCCL_IB_HCA="=$device" "$program" -b 64M -e 256M -f 4 -g 1 2>&1 |
        grep -E '^ +[0-9]+ ' | sed 's/^/  /'
    else
      echo "# NVIDIA's NCCL: not run (needs 2 GPUs here, or --peer and mpirun)"
      break
    fi
  done
fi
echo
((measured > 0)) || die "neither ofi nor ib was in use: nothing was measured (hora's reasons above)"
((${#missing[@]} == 0)) || die "no figure for: ${missing[*]} (a launch failed; its output is in the lines above)"
if ((${#short[@]})); then
  echo "# goal (busbw at least 0.9 of ib_write_bw at 64 MiB and above) not met: ${short[*]}"
  exit 3
fi
echo "# goal (busbw at least 0.9 of ib_write_bw at 64 MiB and above) met by every transport in use"
