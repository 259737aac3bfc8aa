#!/usr/bin/env bash
# Applies .clang-format to every C++ source of the project (run before committing).
# Usage: scripts/format.sh [--check]   (--check: list unformatted files, exit 1 if any)
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cpp' '*.h' '*.cc' '*.c')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in $files; do clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || { echo "$f"; bad=1; }; done
  exit $bad
fi
clang-format -i $files
