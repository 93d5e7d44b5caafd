#!/usr/bin/env bash
# What hora can show on a machine with an NVIDIA GPU, in one command: it
# builds hora with CUDA, runs the GPU test suite, benchmarks the device
# reduction against a device-to-device copy, and the collectives on device
# buffers with 2, 4 and 8 ranks on the GPU against its memory limit. It needs the CUDA toolkit
# (nvcc on PATH or in /usr/local/cuda), a C++20 compiler, Python with Meson
# and ninja (pip is enough), and hwloc and GoogleTest: installed, or as
# Debian 12 packages in a folder (scripts/gpu-deps.sh downloads them on a
# machine with apt), which are unpacked here without installing anything.
#
#   scripts/gpu-check.sh [--tests-only] [DEBS_DIR]
#
# --tests-only builds and runs the GPU test suite alone (no benchmarks, no
# PyTorch): the quick check after a change.
#
# Results go to build-gpu/gpu-check/ (the test log and the benchmark's
# table); the summary is printed last. Exit status: 0 when everything that
# ran passed, 1 otherwise.
#
# Not here yet: hora-perf on device buffers. The script says so in its
# summary.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$repo/build-gpu"
out="$build/gpu-check"
testsOnly=0
if [[ ${1:-} == --tests-only ]]; then testsOnly=1; shift; fi
debs=${1:-}
status=0
summary=()
note() { echo "gpu-check: $*"; }

command -v nvcc >/dev/null || export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { note "nvcc not found (PATH, /usr/local/cuda/bin)"; exit 1; }
mkdir -p "$out"

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

# Only what the GPU checks need: no network transports, no PyTorch backend.
if [[ ! -f "$build/build.ninja" ]]; then
  meson setup "$build" "$repo" --buildtype=release -Dcuda=enabled -Dibverbs=disabled -Dofi=disabled \
    -Dtorch=disabled >"$out/setup.log" 2>&1 || { note "meson setup failed:"; tail -30 "$out/setup.log"; exit 1; }
fi
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
if timeout 420 meson test -C "$build" --no-rebuild --suite gpu --print-errorlogs >"$out/gpu-tests.log" 2>&1; then
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
    if grep -qi "no CUDA device" "$bench"; then
      summary+=("reduce-copy bandwidth: skipped, no GPU")
    else
      summary+=("reduce-copy bandwidth: $bench")
    fi
  else
    status=1
    summary+=("reduce-copy bandwidth: FAILED (see $bench)")
  fi

  # Collectives on device buffers, 2, 4 and 8 ranks as threads on the GPU
  # (bench/micro/device_collectives_bench.cc).
  for ranks in 2 4 8; do
    table="$out/device_collectives_${ranks}ranks.txt"
    if timeout 120 "$build/bench/micro/hora-bench-device-collectives" "$ranks" $((256 << 20)) 20 >"$table" 2>&1; then
      summary+=("device collectives, $ranks ranks on one GPU: $table")
    else
      status=1
      summary+=("device collectives, $ranks ranks on one GPU: FAILED (see $table)")
    fi
  done

  # PyTorch's nccl backend on hora's libnccl.so.2, 2 processes on GPU 0
  # (tests/gpu/torch_smoke.py), where python3 imports torch.
  smoke="$out/torch_smoke.txt"
  if python3 -c "import torch, torch.distributed" 2>/dev/null; then
    if LD_PRELOAD="$build/src/libnccl.so.2" timeout 180 python3 -m torch.distributed.run --nproc_per_node=2 \
        "$repo/tests/gpu/torch_smoke.py" >"$smoke" 2>&1; then
      summary+=("PyTorch (nccl backend on hora, 2 processes on one GPU): ok")
    else
      status=1
      summary+=("PyTorch (nccl backend on hora, 2 processes on one GPU): FAILED (see $smoke)")
      tail -30 "$smoke"
    fi
  else
    summary+=("PyTorch: skipped, python3 cannot import torch")
  fi
fi

((testsOnly == 0)) && summary+=("not run here: hora-perf on device buffers")
echo
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if ((testsOnly == 0)); then
  cat "$bench" 2>/dev/null
  cat "$out"/device_collectives_*ranks.txt 2>/dev/null
fi
echo
for line in "${summary[@]}"; do echo "gpu-check: $line"; done
exit $status
