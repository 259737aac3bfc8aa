#!/usr/bin/env bash
# The main job on a bundled example: parse -> grad -> check-grad -> compile -> run.
# Usage: scripts/main_job.sh [FILE.tir] [FUNC]   (default: examples/matmul.tir matmul)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >/dev/null
FILE=${1:-examples/matmul.tir}
FUNC=${2:-matmul}
T=build/tirc
OUT=$(mktemp -d)
set -x
$T parse "$FILE" > "$OUT/parsed.tir"
$T grad "$FILE" --func "$FUNC" -o "$OUT/with_grad.tir"
$T check-grad "$FILE" --func "$FUNC"
$T schedule "$OUT/with_grad.tir" > "$OUT/scheduled.tir"
$T build "$OUT/with_grad.tir" --target cpu --emit obj -o "$OUT/$FUNC.o"
$T run "$OUT/with_grad.tir" --func "${FUNC}_grad" --random 1 --engine jit
$T verify "$FILE" --func "$FUNC"
