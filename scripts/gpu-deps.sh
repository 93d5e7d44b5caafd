#!/usr/bin/env bash
# Downloads the Debian 12 packages scripts/gpu-check.sh needs on a GPU
# machine that cannot install them itself (no apt, no network): hwloc's
# library and headers, and GoogleTest's. Run it on a Debian 12 machine with
# apt and a network; carry the folder to the GPU machine and give it to
# gpu-check.sh. A GPU machine with these installed needs none of this.
#
#   scripts/gpu-deps.sh DIR
set -euo pipefail
dir=${1:?usage: scripts/gpu-deps.sh DIR}
mkdir -p "$dir"
cd "$dir"
packages=(libhwloc-dev libhwloc15 libgtest-dev libgmock-dev)
apt-get download "${packages[@]}"
ls -1 ./*.deb
