#!/usr/bin/env bash
# Installs every Debian package RRFP needs; idempotent (apt-get only what is missing).
set -euo pipefail
PKGS=(build-essential cmake pkg-config git
      libstarpu-dev libhwloc-dev libopenmpi-dev openmpi-bin
      libcli11-dev nlohmann-json3-dev libfmt-dev
      libgtest-dev libgmock-dev libbenchmark-dev libcairo2-dev
      libtorch-dev python3)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
