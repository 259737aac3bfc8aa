#!/usr/bin/env bash
# Builds tirc and runs every test (CTest). Exit code is CTest's.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh "$@"
ctest --test-dir "${BUILD_DIR:-build}" -j"$(nproc)" --output-on-failure --timeout 900
