#!/usr/bin/env bash
# Builds hora_torch against another torch (a PyPI release, in a virtual
# environment of its own) and runs the torch suite's two test programs
# with it. Needs network access to PyPI and a few GB of disk.
#
#   scripts/torch-version-check.sh [torch version, default 2.5.1]
#
# The virtual environment and build go to $HORA_TORCH_CHECK_DIR (default
# build-torch-VERSION under the repository).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-2.5.1}
work=${HORA_TORCH_CHECK_DIR:-$PWD/build-torch-$version}
python=${PYTHON:-python3}

if [[ ! -x $work/venv/bin/python ]]; then
  "$python" -m venv "$work/venv"
  "$work/venv/bin/pip" install --quiet "torch==$version" numpy
fi
export PATH="$work/venv/bin:$PATH"   # Meson looks for torch in the python3 on PATH first
if [[ ! -f $work/build/build.ninja ]]; then
  meson setup "$work/build" . -Dtests=false -Dcuda=disabled -Dtorch=enabled
fi
meson compile -C "$work/build"
export PYTHONPATH="$work/build/python" HORA_RUN="$work/build/tools/hora-run/hora-run"
export OMP_NUM_THREADS=1 HORA_SOCKET_IFNAME=lo
python3 -c 'import torch; print("torch", torch.__version__)'
python3 tests/torch/test_backend.py
python3 tests/torch/test_examples.py
