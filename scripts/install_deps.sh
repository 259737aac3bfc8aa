#!/usr/bin/env bash
# Installs the Debian 12 packages tirc needs (as root; uses sudo when not root).
# Only missing packages are installed, so this is quick on a warm machine.
set -euo pipefail
pkgs=(cmake ninja-build g++ clang-19 libclang-rt-19-dev ccache antlr4 libantlr4-runtime-dev llvm-19-dev libfmt-dev
      libgtest-dev libcli11-dev nlohmann-json3-dev libopenblas-dev python3-numpy python3-torch zlib1g-dev
      libzstd-dev libedit-dev libxml2-dev libffi-dev libcurl4-openssl-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq || true
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
