#!/usr/bin/env bash
# Download the wheels the GPU scripts install (benchmarks/gpu/wheels.txt, with their
# dependencies as pip resolves them for that Python) for a Python version, into a folder
# (default .gpu-wheels, ignored by git: name it in the device call's carry).  The lent
# GPU machines run Python 3.12:
#   benchmarks/gpu/wheels.sh 3.12 .gpu-wheels
set -eu
PYVER=${1:-3.12}
DEST=${2:-.gpu-wheels}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DEST"
pip download -q --only-binary=:all: --python-version "$PYVER" \
  --platform manylinux2014_x86_64 -d "$DEST" \
  $(grep -v '^#' "$HERE/wheels.txt")
ls "$DEST"
