#!/usr/bin/env bash
# Configures and builds tirc into ${BUILD_DIR:-build} (Release -O2 without debug info, LLVM on;
# pass -DCMAKE_BUILD_TYPE=RelWithDebInfo to debug).
# Extra CMake arguments are passed through; TARGETS limits what is built.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja "$@" >/dev/null
ninja -C "$BUILD_DIR" ${TARGETS:-}
