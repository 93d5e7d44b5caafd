#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair,
# each running two ranks under hora-run, four ranks in all. Checks that
#   - every collective gives the right result across the hosts (also with
#     small messages by LL, where shared memory and TCP meet in one ring),
#   - hora picks the veth interface by itself (the master address is on its
#     subnet; HORA_SOCKET_IFNAME is unset),
#   - ranks of one host talk through shared memory and ranks of different
#     hosts through TCP,
#   - a rank killed mid-run is named by the ranks of the other host as the
#     rank that failed first, well before HORA_TIMEOUT,
#   - nothing is left behind: no namespace, no veth, no process.
# With --bench it then shapes the link with tc and prints the all-reduce bus
# bandwidth of hora-perf next to the shaped rate (BENCH_ARGS: hora-perf's
# arguments instead of an 8-32 MiB all-reduce; BENCH_SHAPED=0: the unshaped
# link only). With --transport ofi every pair is forced onto the ofi
# transport (libfabric's tcp provider), the RDMA credit protocol end to end
# between the two hosts; --transport tcp forces tcp, for comparison.
#
# usage: two_hosts.sh [--transport ofi|tcp] [--bench HORA_PERF] HORA_RUN COLLECTIVE_CHECK
#
# Needs root (network namespaces); exits 77, "skipped" for meson, where it
# cannot create them. See docs/multihost-testing.md.
set -u

readonly SKIPPED=77
readonly RANKS_PER_HOST=2
readonly HOSTS=2
readonly NRANKS=$((RANKS_PER_HOST * HOSTS))
# The benchmarking range 198.18.0.0/15 (RFC 2544): never routed, so these
# addresses cannot collide with a real network the machine is on.
readonly ADDR=(198.18.0.1 198.18.0.2)
readonly PREFIX=24
readonly MASTER_PORT=29500  # each run has its own namespaces, so a fixed port is safe
readonly HOSTNAMES=(hostA hostB)
readonly CHECK_SECONDS=60    # hora-run --timeout for the checker job
readonly BENCH_SECONDS=200   # and for each benchmark job (a shaped link is slow)
readonly PEER_TIMEOUT=20     # HORA_TIMEOUT: a lost peer fails the job well within it
readonly SHAPED_RATE_MBIT=200

usage() {
  echo "usage: $0 [--transport ofi|tcp] [--bench HORA_PERF] HORA_RUN COLLECTIVE_CHECK" >&2
  exit 2
}

forced_transport=""
if [[ ${1:-} == --transport ]]; then
  [[ $# -ge 2 && ($2 == ofi || $2 == tcp) ]] || usage
  forced_transport=$2
  shift 2
fi
hora_perf=""
if [[ ${1:-} == --bench ]]; then
  [[ $# -ge 2 ]] || usage
  hora_perf=$2
  shift 2
fi
[[ $# -eq 2 ]] || usage
hora_run=$1
checker=$2
for program in "$hora_run" "$checker" ${hora_perf:+"$hora_perf"}; do
  [[ -f $program && -x $program ]] || { echo "FAIL: $program is not an executable file" >&2; exit 1; }
done
# Absolute paths: the programs run from inside other namespaces and shells.
hora_run=$(realpath -- "$hora_run")
checker=$(realpath -- "$checker")
[[ -n $hora_perf ]] && hora_perf=$(realpath -- "$hora_perf")

skip() {
  echo "SKIPPED: $*"
  exit "$SKIPPED"
}

# --- Can we make namespaces here? -------------------------------------------
[[ $(id -u) -eq 0 ]] || skip "creating network namespaces needs root (run the test as root, or under sudo)"
command -v ip >/dev/null || skip "the 'ip' command is missing (Debian package iproute2)"
ip netns list >/dev/null 2>&1 || skip "'ip netns' is not supported by this ip command or kernel"
if [[ -n $hora_perf ]]; then
  command -v tc >/dev/null || skip "the 'tc' command is missing (Debian package iproute2); it shapes the link"
fi

# Names unique to this run (the shell's pid), so parallel runs do not clash.
# An interface name has at most 15 characters: "hvA" + a pid fits.
readonly NS=("hora-hostA-$$" "hora-hostB-$$")
readonly VETH=("hvA$$" "hvB$$")
work=$(mktemp -d) || { echo "FAIL: cannot create a temporary directory" >&2; exit 1; }

namespace_exists() { ip netns list | awk '{ print $1 }' | grep -qxF -- "$1"; }

# Stops every process inside our namespaces (by pid), then deletes them;
# deleting a namespace destroys the veth end in it, and with it the pair.
cleanup() {
  local ns pids _
  for ns in "${NS[@]}"; do
    namespace_exists "$ns" || continue
    mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
    if ((${#pids[@]} > 0)); then
      kill -TERM "${pids[@]}" 2>/dev/null
      for _ in 1 2 3 4 5 6 7 8 9 10; do
        mapfile -t pids < <(ip netns pids "$ns" 2>/dev/null)
        ((${#pids[@]} == 0)) && break
        sleep 0.3
      done
      ((${#pids[@]} > 0)) && kill -KILL "${pids[@]}" 2>/dev/null && sleep 0.2
    fi
    ip netns delete "$ns" 2>/dev/null
  done
  rm -rf -- "$work"
}
trap cleanup EXIT
# A signal ends the script through the EXIT trap; background jobs are
# waited for with `wait`, which a trapped signal interrupts at once.
trap 'exit 130' INT
trap 'exit 143' TERM HUP

# --- The two hosts ------------------------------------------------------------
ip netns add "${NS[0]}" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
ip netns add "${NS[1]}" 2>"$work/err" || skip "cannot create a network namespace: $(cat "$work/err")"
# The pair is made directly inside the namespaces: it never appears in the
# machine's own namespace, whose interfaces stay untouched.
ip link add name "${VETH[0]}" netns "${NS[0]}" type veth peer name "${VETH[1]}" netns "${NS[1]}" 2>"$work/err" ||
  skip "cannot create a veth pair: $(cat "$work/err")"
for h in 0 1; do
  if ! { ip -n "${NS[h]}" link set lo up &&
    ip -n "${NS[h]}" addr add "${ADDR[h]}/$PREFIX" dev "${VETH[h]}" &&
    ip -n "${NS[h]}" link set "${VETH[h]}" up; }; then
    echo "FAIL: cannot configure ${VETH[h]} in ${NS[h]}" >&2
    exit 1
  fi
done
# Both ends up before any rank looks: libfabric's tcp provider lists only
# interfaces that are running.
for _ in $(seq 50); do
  ip -n "${NS[0]}" link show "${VETH[0]}" | grep -q 'state UP' &&
    ip -n "${NS[1]}" link show "${VETH[1]}" | grep -q 'state UP' && break
  sleep 0.1
done
echo "hosts: ${HOSTNAMES[0]} = netns ${NS[0]}, ${VETH[0]} ${ADDR[0]}/$PREFIX;" \
  "${HOSTNAMES[1]} = netns ${NS[1]}, ${VETH[1]} ${ADDR[1]}/$PREFIX"

# Each host gets its own hostname too when a UTS namespace can be made. hora
# tells hosts apart by network namespace anyway; the names make logs readable.
if unshare --uts true 2>/dev/null; then
  own_hostnames=1
else
  own_hostnames=0
  echo "note: 'unshare --uts' is not available; both hosts keep the machine's hostname"
fi

# Runs "$@" as host h: inside its network namespace, under its hostname.
on_host() {
  local h=$1
  shift
  if ((own_hostnames)); then
    # shellcheck disable=SC2016 # $1 and $@ belong to the inner shell
    ip netns exec "${NS[h]}" unshare --uts -- sh -c 'hostname "$1" && shift && exec "$@"' sh "${HOSTNAMES[h]}" "$@"
  else
    ip netns exec "${NS[h]}" "$@"
  fi
}

# The environment hora must cope with on its own: no interface named, no
# transport forced.
unset HORA_SOCKET_IFNAME NCCL_SOCKET_IFNAME HORA_COMM_ID NCCL_COMM_ID HORA_TRANSPORT NCCL_SHM_DISABLE \
  HORA_DEBUG_FILE NCCL_DEBUG_FILE NCCL_DEBUG
export HORA_TIMEOUT=$PEER_TIMEOUT
if [[ $forced_transport == ofi ]]; then
  export HORA_TRANSPORT=ofi HORA_OFI_PROVIDER=tcp
  echo "transport: every pair forced onto ofi (libfabric's tcp provider)"
elif [[ $forced_transport == tcp ]]; then
  export HORA_TRANSPORT=tcp
  echo "transport: every pair forced onto tcp"
fi

# Starts the job "$@" on both hosts at once (node ranks 0 and 1), stopped by
# hora-run after $2 seconds, and waits for both. Output of host h goes to
# $work/<tag>.host<h>.log. Returns non-zero if either host's hora-run did.
run_job() {
  local tag=$1 seconds=$2
  shift 2
  local pids=() h status=0 rc
  for h in 0 1; do
    # `timeout` is the backstop should hora-run itself hang.
    on_host "$h" timeout -k 5 $((seconds + 10)) \
      "$hora_run" --nnodes "$HOSTS" --node-rank "$h" --master-addr "${ADDR[0]}" --master-port "$MASTER_PORT" \
      -n "$RANKS_PER_HOST" --tag-output --timeout "$seconds" --kill-timeout 3 "$@" \
      >"$work/$tag.host$h.log" 2>&1 &
    pids+=($!)
  done
  for h in 0 1; do
    wait "${pids[h]}"
    rc=$?
    if ((rc != 0)); then
      ((${expect_failure:-0})) ||
        echo "FAIL: ${HOSTNAMES[h]}: hora-run exited with status $rc$( ((rc == 124)) && echo ' (it ran past its deadline)')"
      status=1
    fi
  done
  return $status
}

show_logs() {
  local tag=$1 h
  for h in 0 1; do
    echo "----- ${HOSTNAMES[h]} (node rank $h) -----"
    cat "$work/$tag.host$h.log"
  done
}

failures=0
# Passes when the log has a line matching the extended regex $2.
expect_line() {
  local log=$1 pattern=$2 what=$3
  if grep -Eq -- "$pattern" "$log"; then
    echo "ok: $what"
  else
    echo "FAIL: $what: no line in the log matches: $pattern"
    failures=$((failures + 1))
  fi
}

# Escapes the dots of an address for an extended regex.
regex_quote() { printf '%s' "${1//./\\.}"; }

# --- Every collective across the two hosts -------------------------------------
HORA_DEBUG=INFO run_job check "$CHECK_SECONDS" "$checker"
job_status=$?

ring_order=$(seq -s ' -> ' 0 $((NRANKS - 1)))" -> 0"
for ((rank = 0; rank < NRANKS; rank++)); do
  h=$((rank / RANKS_PER_HOST))
  next=$(((rank + 1) % NRANKS))
  if [[ -n $forced_transport ]]; then
    transport=$forced_transport
  elif ((next / RANKS_PER_HOST == h)); then
    transport=shm
  else
    transport=tcp
  fi
  log="$work/check.host$h.log"
  host_pattern='[^:]+'
  ((own_hostnames)) && host_pattern=${HOSTNAMES[h]}
  tag="^\[rank $rank\] $host_pattern:[0-9]+:\[rank $rank\] hora INFO"
  expect_line "$log" "$tag bootstrap: interface ${VETH[h]} $(regex_quote "${ADDR[h]}"):[0-9]+, root $(regex_quote "${ADDR[0]}:$MASTER_PORT")\$" \
    "rank $rank chose ${VETH[h]} (${ADDR[h]}) by itself"
  expect_line "$log" "$tag ring: $ring_order; to the next rank via $transport\$" \
    "rank $rank reaches rank $next via $transport"
  expect_line "$log" "^\[rank $rank\] collective_check: rank $rank of $NRANKS on $host_pattern: all [0-9]+ results right\$" \
    "rank $rank: every collective right"
done

if ((job_status != 0 || failures != 0)); then
  show_logs check
  echo "FAIL: the two-host job did not pass (see the logs above)"
  exit 1
fi

# --- The same with small messages by LL ------------------------------------------
# A rank whose previous rank is on the other host relays ring steps to its
# shared-memory neighbour after waiting on the network, so the stamp of such
# an operation may leave alone, ahead of its LL bytes; the receiver must take
# it (docs/transports.md, Stamps).
if [[ -z $forced_transport ]]; then
  HORA_LL_MAX_BYTES=4096 HORA_DEBUG=WARN run_job check-ll "$CHECK_SECONDS" "$checker"
  ll_status=$?
  for ((rank = 0; rank < NRANKS; rank++)); do
    h=$((rank / RANKS_PER_HOST))
    expect_line "$work/check-ll.host$h.log" \
      "^\[rank $rank\] collective_check: rank $rank of $NRANKS on [^:]+: all [0-9]+ results right\$" \
      "rank $rank: every collective right with HORA_LL_MAX_BYTES=4096"
  done
  if ((ll_status != 0 || failures != 0)); then
    show_logs check-ll
    echo "FAIL: the two-host job with small messages by LL did not pass (see the logs above)"
    exit 1
  fi
fi

# --- A rank killed mid-run: every other rank names it ---------------------------
# Rank 2 (on hostB) is killed while the four ranks run collectives. Rank 3
# (same host) sees its shared-memory lifeline close; rank 1 (hostA) sees its
# TCP connection to rank 2 close and, as it cannot see a pid on another
# host, probes rank 2's listener, which refuses. Ranks 0 and 1 on hostA,
# and rank 3 beside it on hostB, must name rank 2 as the rank that failed
# first, long before HORA_TIMEOUT.
long_counts=()
for _ in $(seq 200); do long_counts+=($(((1 << 20) + 3))); done
expect_failure=1 run_job kill "$CHECK_SECONDS" "$checker" "${long_counts[@]}" &
kill_job=$!
victim=""
for _ in $(seq 200); do
  for pid in $(ip netns pids "${NS[1]}" 2>/dev/null); do
    if grep -qa collective_check "/proc/$pid/cmdline" 2>/dev/null &&
      tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx 'RANK=2'; then
      victim=$pid
    fi
  done
  [[ -n $victim ]] && break
  sleep 0.1
done
if [[ -z $victim ]]; then
  echo "FAIL: rank 2 of the second job never started"
  failures=$((failures + 1))
else
  sleep 2  # into its collectives
  kill -KILL "$victim"
  killed=$(date +%s%N)
fi
wait "$kill_job"
if [[ -n $victim ]]; then
  elapsed_ms=$((($(date +%s%N) - killed) / 1000000))
  host_pattern='[^,]+'
  ((own_hostnames)) && host_pattern=${HOSTNAMES[1]}
  for rank in 0 1; do
    expect_line "$work/kill.host0.log" "^\[rank $rank\] collective_check: .*rank 2 \(host $host_pattern, pid $victim\) failed first" \
      "rank $rank (${HOSTNAMES[0]}) names the killed rank 2 as the first failure"
  done
  expect_line "$work/kill.host1.log" "^\[rank 3\] collective_check: .*rank 2 \(host $host_pattern, pid $victim\) failed first" \
    "rank 3 (${HOSTNAMES[1]}, the killed rank's own host) names the killed rank 2 as the first failure"
  if ((elapsed_ms < PEER_TIMEOUT * 1000 / 2)); then
    echo "ok: the job ended $elapsed_ms ms after the kill (HORA_TIMEOUT is ${PEER_TIMEOUT} s)"
  else
    echo "FAIL: the job took $elapsed_ms ms to end after the kill (HORA_TIMEOUT is ${PEER_TIMEOUT} s)"
    failures=$((failures + 1))
  fi
fi
if ((failures != 0)); then
  show_logs kill
  echo "FAIL: the killed-rank job did not end as it should (see the logs above)"
  exit 1
fi

# --- Optional: bandwidth over a shaped link ------------------------------------
# A benchmark, not a check on timing: it prints the figures.

# hora-perf's table rows (rank 0 prints them): size count type redop root,
# then time algbw busbw #wrong out of place, and the same in place. The bus
# bandwidth is recomputed from the time, in MB/s: hora-perf prints GB/s with
# two decimals, too coarse for a slow link.
busbw_table() {
  grep -E '^\[rank 0\] +[0-9]+ ' "$work/$1.host0.log" |
    awk -v n="$NRANKS" '{
      factor = 2 * (n - 1) / n   # all-reduce: each rank sends 2(n-1)/n of the buffer
      printf "  %5.1f MiB   busbw %7.1f MB/s out of place, %7.1f MB/s in place   (#wrong %s, %s)\n",
             $3 / 1048576, $3 / $8 * factor, $3 / $12 * factor, $11, $15 }'
}

if [[ -n $hora_perf ]]; then
  read -ra perf_args <<<"${BENCH_ARGS:-all_reduce -b 8M -e 32M -f 2 -w 1 -n 2 -c 1}"
  echo
  echo "benchmark: hora-perf ${perf_args[*]}, $NRANKS ranks on 2 hosts"
  HORA_DEBUG=WARN run_job unshaped "$BENCH_SECONDS" "$hora_perf" "${perf_args[@]}" || { show_logs unshaped; exit 1; }
  echo "veth link, unshaped:"
  busbw_table unshaped
fi
if [[ -n $hora_perf && ${BENCH_SHAPED:-1} != 0 ]]; then
  # Token bucket on the egress of both ends: each direction of the link
  # carries at most the shaped rate. burst must hold at least a timer tick
  # of traffic (rate / HZ), or tbf cannot reach its rate.
  for h in 0 1; do
    ip netns exec "${NS[h]}" tc qdisc add dev "${VETH[h]}" root tbf rate "${SHAPED_RATE_MBIT}mbit" \
      burst 256kb latency 20ms 2>"$work/err" || skip "tc cannot shape ${VETH[h]}: $(cat "$work/err")"
  done
  HORA_DEBUG=WARN run_job shaped "$BENCH_SECONDS" "$hora_perf" "${perf_args[@]}" || { show_logs shaped; exit 1; }
  # The ring crosses between the hosts twice, once each way (rank 1 -> 2 and
  # 3 -> 0), and every rank sends the same number of bytes, so the bus
  # bandwidth is at most what one direction of the link carries.
  echo "veth link shaped to $SHAPED_RATE_MBIT Mbit/s each way ($((SHAPED_RATE_MBIT / 8)) MB/s):"
  busbw_table shaped
fi

# --- Nothing left behind --------------------------------------------------------
# Every job has ended, so no process may remain in either namespace: a rank
# still running would mean hora-run lost track of it.
leftovers=0
for ns in "${NS[@]}"; do
  mapfile -t remaining < <(ip netns pids "$ns" 2>/dev/null)
  if ((${#remaining[@]} > 0)); then
    echo "FAIL: processes still running in $ns after its jobs ended:"
    ps -o pid=,args= -p "$(IFS=,; echo "${remaining[*]}")"
    leftovers=1
  fi
done
cleanup
for ns in "${NS[@]}"; do
  if namespace_exists "$ns"; then echo "FAIL: namespace $ns is still there"; leftovers=1; fi
done
for v in "${VETH[@]}"; do
  if ip link show "$v" >/dev/null 2>&1; then echo "FAIL: interface $v is still there"; leftovers=1; fi
done
((leftovers == 0)) || exit 1
echo "ok: namespaces, veth pair and processes removed"
echo "PASS"
