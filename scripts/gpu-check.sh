#!/usr/bin/env bash
# What hora can show on a machine with an NVIDIA GPU, in one command: it
# builds hora with CUDA, runs the GPU test suite, benchmarks the device
# reduction against a device-to-device copy, runs hora-perf for every
# collective on device buffers with 1, 2 and 4 ranks on GPU 0, the
# collectives with 2, 4 and 8 ranks against the GPU's memory limit, NVIDIA's
# nccl-tests on hora (and on NVIDIA's NCCL beside it, where PyTorch brought
# one) when their source is given, and a PyTorch smoke test where python3
# imports torch.
#
#   scripts/gpu-check.sh [--tests-only] [--nccl-tests SRC] [--results DIR] [DEBS_DIR]
#
# --tests-only     build and run the GPU test suite alone: the quick check
#                  after a change.
# --nccl-tests SRC the source of NVIDIA's nccl-tests, tag v2.16.9 (the last
#                  that builds against a 2.28 nccl.h without the device
#                  API). It is built against hora's nccl.h and its *_perf
#                  programs run on one rank, on hora's libnccl.so.2 and on
#                  NVIDIA's (found in PyTorch's site-packages, or named by
#                  NVIDIA_NCCL_LIB_DIR).
# --results DIR    where the logs, tables and summary go (default
#                  build-gpu/gpu-check).
# DEBS_DIR         hwloc and GoogleTest as Debian 12 packages, unpacked here
#                  without installing anything (scripts/gpu-deps.sh
#                  downloads them on a machine with apt). Without it they
#                  must be installed.
#
# It needs the CUDA toolkit (nvcc on PATH or in /usr/local/cuda), a C++20
# compiler and Python with Meson and ninja (pip is enough). The summary is
# printed last and written to summary.txt. Exit status: 0 when everything
# that ran passed, 1 otherwise.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$repo/build-gpu"
out="$build/gpu-check"
testsOnly=0
ncclTests=""
debs=""
while (($#)); do
  case $1 in
    --tests-only) testsOnly=1 ;;
    --nccl-tests) ncclTests=$(cd "$2" && pwd) || exit 2; shift ;;
    --results) out=$2; shift ;;
    -*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
    *) debs=$1 ;;
  esac
  shift
done
status=0
summary=()
note() { echo "gpu-check: $*"; }

command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { note "nvcc not found (PATH, /usr/local/cuda/bin)"; exit 1; }
mkdir -p "$out" && out=$(cd "$out" && pwd)

# Dependencies from .deb files: unpacked into build-gpu/deps, their
# pkg-config files pointed there, their libraries on LD_LIBRARY_PATH.
if [[ -n "$debs" ]]; then
  deps="$build/deps"
  rm -rf "$deps" && mkdir -p "$deps"
  debs=$(cd "$debs" && pwd)
  for deb in "$debs"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$deps"
    else  # a .deb is an ar archive holding data.tar.*
      unpack=$(mktemp -d)
      (cd "$unpack" && ar x "$deb") && tar -xf "$unpack"/data.tar.* -C "$deps"
      rm -rf "$unpack"
    fi
  done
  libdir="$deps/usr/lib/x86_64-linux-gnu"
  for pc in "$libdir"/pkgconfig/*.pc; do sed -i "s|^prefix=/usr\$|prefix=$deps/usr|" "$pc"; done
  export PKG_CONFIG_PATH="$libdir/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  note "dependencies from $debs unpacked into $deps"
fi

# Only what the GPU checks need: no network transports, no PyTorch backend,
# and kernels for this machine's GPU alone (its compute capability, from
# nvidia-smi), which halves their compile time; the default architectures
# where nvidia-smi cannot say.
gencode=()
capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')
if [[ $capability =~ ^[0-9]+$ ]]; then
  gencode=("-Dgpu_gencode=['-gencode=arch=compute_$capability,code=sm_$capability']")
  note "kernels for compute capability $capability only"
fi
if [[ ! -f "$build/build.ninja" ]]; then
  meson setup "$build" "$repo" --buildtype=release -Dcuda=enabled -Dibverbs=disabled -Dofi=disabled \
    -Dtorch=disabled "${gencode[@]}" >"$out/setup.log" 2>&1 || { note "meson setup failed:"; tail -30 "$out/setup.log"; exit 1; }
fi
# Brings the build files (and Meson's list of targets read below) up to date
# with the sources' meson.build files.
ninja -C "$build" build.ninja >"$out/setup.log" 2>&1 || { note "meson reconfigure failed:"; tail -30 "$out/setup.log"; exit 1; }
# Only the programs this script runs (the GPU tests, the device benchmarks,
# hora-perf and the library hora-run preloads), not the whole tree.
targets=$(python3 - "$build" "$testsOnly" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1] + "/meson-info/intro-targets.json")):
    if t["name"].startswith("gpu_") or (sys.argv[2] == "0" and t["name"] in (
            "hora-bench-reduce-device", "hora-bench-device-collectives", "hora-perf", "hora-run", "nccl")):
        print(" ".join(f.removeprefix(sys.argv[1] + "/") for f in t["filename"]))
PY
)
start=$(date +%s)
# shellcheck disable=SC2086 # one target per word
if ! ninja -C "$build" $targets >"$out/build.log" 2>&1; then
  note "the build failed:"; grep -E "error|FAILED" -A3 "$out/build.log" | head -40; exit 1
fi
summary+=("build with CUDA: ok ($(($(date +%s) - start)) s)")

# The GPU suite: every test program exits 77 (skipped) without a device.
if timeout 300 meson test -C "$build" --no-rebuild --suite gpu --print-errorlogs >"$out/gpu-tests.log" 2>&1; then
  summary+=("gpu test suite: $(grep -E '^(Ok|Skipped|Fail):' "$out/gpu-tests.log" | tr -s ' ' | tr '\n' ' ')")
else
  status=1
  summary+=("gpu test suite: FAILED (see $out/gpu-tests.log)")
  tail -40 "$out/gpu-tests.log"
fi

if ((testsOnly == 0)); then
  # The device reduction against cudaMemcpy, device to device
  # (bench/micro/reduce_device_bench.cc).
  bench="$out/reduce_device_bandwidth.txt"
  if "$build/bench/micro/hora-bench-reduce-device" >"$bench" 2>&1; then
    summary+=("reduce-copy bandwidth: $bench")
  else
    status=1
    summary+=("reduce-copy bandwidth: FAILED (see $bench)")
  fi

  # hora-perf on device buffers, every collective, 1, 2 and 4 ranks as
  # threads on GPU 0 (HORA_PERF_DEVICE), every result checked.
  perfLogs=()
  for collective in all_reduce reduce_scatter all_gather broadcast reduce sendrecv alltoall; do
    for ranks in 1 2 4; do
      log="$out/hora-perf_${collective}_${ranks}ranks.txt"
      perfLogs+=("hora-perf $collective, $ranks rank(s)=$log")
      HORA_PERF_DEVICE=0 HORA_TIMEOUT=20 timeout 60 "$build/bench/perf/hora-perf" "$collective" -b 16 -e 256M -f 8 \
        -t "$ranks" >"$log" 2>&1
      rc=$?
      if ((rc != 0)); then
        status=1
        summary+=("hora-perf $collective, $ranks rank(s) on one GPU: FAILED, exit $rc (see $log)")
        ((rc == 124)) && break  # timed out: more ranks would too
      fi
    done
  done

  # 4 ranks as threads, each driving its own rank, ten launches: the case
  # that hung at its first size until such ranks were held to one
  # unfinished kernel (docs/gpu.md, "Ranks of one process on one GPU").
  # Then small all-reduces with 2 ranks by LL and by Simple
  # (NCCL_PROTO=Simple), five launches each, alternating.
  repeatLog="$out/hora-perf_all_reduce_4ranks_repeated.txt"
  failed=0
  for i in 1 2 3 4 5 6 7 8 9 10; do
    HORA_PERF_DEVICE=0 HORA_TIMEOUT=10 timeout 60 "$build/bench/perf/hora-perf" all_reduce -b 8 -e 64K -f 4 \
      -t 4 -w 100 -n 1000 >>"$repeatLog" 2>&1 || failed=$((failed + 1))
  done
  ((failed == 0)) || status=1
  summary+=("hora-perf all_reduce, 4 ranks as threads, 10 launches: $failed failed (see $repeatLog)")
  for i in 1 2 3 4 5; do
    for protocol in LL Simple; do
      log="$out/hora-perf_all_reduce_2ranks_$protocol.txt"
      HORA_PERF_DEVICE=0 NCCL_PROTO=$protocol HORA_TIMEOUT=20 timeout 60 "$build/bench/perf/hora-perf" all_reduce \
        -b 8 -e 64K -f 4 -t 2 -w 100 -n 1000 >>"$log" 2>&1 || { status=1; summary+=("LL/Simple launch: FAILED (see $log)"); }
    done
  done
  summary+=("small all-reduce by LL and by Simple, 2 ranks: $out/hora-perf_all_reduce_2ranks_{LL,Simple}.txt")

  # Groups of 8 all-reduces per call (-m 8), 2 ranks as threads: up to 8
  # collectives per ring kernel launch (the default) against a launch per
  # collective (HORA_DEVICE_COLLECTIVES_PER_LAUNCH=1), five launches each,
  # alternating.
  for i in 1 2 3 4 5; do
    for perLaunch in 8 1; do
      log="$out/hora-perf_all_reduce_2ranks_groups_of_8_perlaunch$perLaunch.txt"
      HORA_PERF_DEVICE=0 HORA_DEVICE_COLLECTIVES_PER_LAUNCH=$perLaunch HORA_TIMEOUT=20 timeout 60 \
        "$build/bench/perf/hora-perf" all_reduce -b 8 -e 1M -f 8 -t 2 -m 8 -w 20 -n 200 >>"$log" 2>&1 ||
        { status=1; summary+=("groups of 8, $perLaunch per launch: FAILED (see $log)"); }
    done
  done
  summary+=("groups of 8 all-reduces, 2 ranks, 8 or 1 per launch: $out/hora-perf_all_reduce_2ranks_groups_of_8_perlaunch{8,1}.txt")

  # Collectives on device buffers, 2, 4 and 8 ranks as threads on the GPU,
  # beside the limit the GPU's memory sets (bench/micro/device_collectives_bench.cc).
  for ranks in 2 4 8; do
    table="$out/device_collectives_${ranks}ranks.txt"
    if HORA_TIMEOUT=20 timeout 60 "$build/bench/micro/hora-bench-device-collectives" "$ranks" $((256 << 20)) 20 >"$table" 2>&1; then
      summary+=("device collectives against the memory limit, $ranks ranks on one GPU: $table")
    else
      status=1
      summary+=("device collectives against the memory limit, $ranks ranks on one GPU: FAILED (see $table)")
    fi
  done

  # NVIDIA's nccl-tests, built against hora's nccl.h, on hora's
  # libnccl.so.2 and, beside it, on NVIDIA's: one rank on GPU 0.
  ncclLogs=()
  if [[ -n "$ncclTests" ]]; then
    home="$build/nccl-home"
    rm -rf "$home" && mkdir -p "$home/lib"
    ln -s "$repo/include" "$home/include"
    ln -s "$build/src/libnccl.so.2" "$home/lib/libnccl.so"
    testsBuild="$build/nccl-tests"
    cuda=$(dirname "$(dirname "$(command -v nvcc)")")
    if make -C "$ncclTests/src" -j"$(nproc)" NCCL_HOME="$home" CUDA_HOME="$cuda" BUILDDIR="$testsBuild" \
        NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" >"$out/nccl-tests-build.log" 2>&1; then
      nvidiaLib=${NVIDIA_NCCL_LIB_DIR:-$(python3 - <<'PY' 2>/dev/null
import glob, os, site
for root in site.getsitepackages() + [site.getusersitepackages()]:
    for found in glob.glob(os.path.join(root, "nvidia", "**", "libnccl.so.2"), recursive=True):
        print(os.path.dirname(found)); raise SystemExit
PY
)}
      libraries=("hora=$build/src")
      [[ -n "$nvidiaLib" ]] && libraries+=("nvidia=$nvidiaLib")
      for collective in all_reduce reduce_scatter all_gather broadcast reduce sendrecv alltoall gather scatter; do
        for entry in "${libraries[@]}"; do
          library=${entry%%=*}
          log="$out/nccl-tests_${collective}_${library}.txt"
          ncclLogs+=("nccl-tests ${collective}_perf on $library=$log")
          path="${entry#*=}:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
          # Which libnccl.so.2 the dynamic loader chose, then the run.
          { LD_LIBRARY_PATH=$path LD_TRACE_LOADED_OBJECTS=1 "$testsBuild/${collective}_perf" | grep libnccl
            LD_LIBRARY_PATH=$path NCCL_TESTS_DEVICE=0 HORA_TIMEOUT=20 timeout 60 "$testsBuild/${collective}_perf" \
              -b 16 -e 256M -f 8 -g 1; } >"$log" 2>&1 \
            || { status=1; summary+=("nccl-tests ${collective}_perf on $library: FAILED (see $log)"); }
        done
      done
      [[ -z "$nvidiaLib" ]] && summary+=("nccl-tests on NVIDIA's NCCL: skipped, no libnccl.so.2 in PyTorch's packages")
    else
      status=1
      summary+=("nccl-tests build against hora's nccl.h: FAILED (see $out/nccl-tests-build.log)")
      tail -20 "$out/nccl-tests-build.log"
    fi
  else
    summary+=("nccl-tests: skipped (give their source with --nccl-tests SRC)")
  fi

  # PyTorch's nccl backend on hora's libnccl.so.2, 2 processes on GPU 0,
  # where python3 imports torch: the collectives and a DDP step
  # (tests/gpu/torch_smoke.py), then, separately so that a failure there
  # leaves the first verdict standing, the point-to-point calls
  # (tests/gpu/torch_p2p.py) and subgroups made by ncclCommSplit, blocking
  # and non-blocking (tests/gpu/torch_groups.py).
  torchCheck() {  # torchCheck SCRIPT LABEL [NONBLOCKING]
    local log="$out/${1%.py}${3:+-nonblocking}.txt"
    if LD_PRELOAD="$build/src/libnccl.so.2" TORCH_NCCL_USE_COMM_NONBLOCKING="${3:-0}" timeout 180 \
        python3 -m torch.distributed.run --nproc_per_node=2 "$repo/tests/gpu/$1" >"$log" 2>&1; then
      summary+=("PyTorch $2 on hora, 2 processes on one GPU: ok")
    else
      status=1
      summary+=("PyTorch $2 on hora, 2 processes on one GPU: FAILED (see $log)")
      tail -30 "$log"
    fi
  }
  if python3 -c "import torch, torch.distributed" 2>/dev/null; then
    torchCheck torch_smoke.py "(nccl backend: collectives and a DDP step)"
    torchCheck torch_p2p.py "point-to-point (send/recv, all_to_all, gather, scatter)"
    torchCheck torch_groups.py "subgroups (ncclCommSplit)"
    torchCheck torch_groups.py "subgroups of non-blocking communicators" 1
  else
    summary+=("PyTorch: skipped, python3 cannot import torch")
  fi
fi

{
  echo
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  if ((testsOnly == 0)); then
    cat "$bench" 2>/dev/null
    cat "$out"/device_collectives_*ranks.txt 2>/dev/null
    echo
    python3 "$repo/scripts/perf-summary.py" "${perfLogs[@]}" "${ncclLogs[@]}"
  fi
  echo
  for line in "${summary[@]}"; do echo "gpu-check: $line"; done
} | tee "$out/summary.txt"
exit $status
