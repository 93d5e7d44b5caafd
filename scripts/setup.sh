#!/usr/bin/env bash
# Installs what hora needs to build (Debian 12 packages; skipped when already
# present), then configures and builds it in ./build (or $HORA_BUILD_DIR).
# Idempotent: run it again after pulling changes.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HORA_BUILD_DIR:-build}

# python3-matplotlib: bench/compare/plot.py draws the comparisons' figures,
# and the bench test suite checks it. python3-torch, libtorch-dev and
# pybind11-dev: hora_torch, the torch.distributed backend (python/), is
# built and tested against Debian's torch. openmpi-bin: the launcher suite
# starts ranks with Open MPI's mpirun (env:// init from OMPI_COMM_WORLD_*).
# libfabric-dev: the ofi transport's headers (the library itself is loaded
# at run time), and libfabric1, whose tcp provider the ofi tests run over.
packages=(g++ meson ninja-build pkg-config libhwloc-dev hwloc libibverbs-dev libfabric-dev
          libgtest-dev libgmock-dev libbenchmark-dev iproute2 procps python3-matplotlib
          python3-torch libtorch-dev pybind11-dev openmpi-bin)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: missing packages: ${missing[*]}" >&2
    echo "setup: install them with: sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The verbs and libfabric transports are part of every build made here:
# required, so that their code and tests can never drop out unnoticed
# because a package is missing (meson's default is to build them when found).
if [[ ! -f "$build_dir/build.ninja" ]]; then
  meson setup "$build_dir" . -Dibverbs=enabled -Dofi=enabled
fi
meson compile -C "$build_dir"
