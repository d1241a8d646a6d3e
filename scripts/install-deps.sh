#!/usr/bin/env bash
# Installs what building and testing emuprof needs on a fresh machine: the
# Debian packages in scripts/debian-packages.txt (apt-get install is a no-op
# for those already present), then emuprof's patched Unicorn build
# (scripts/build-unicorn.sh, a no-op when it is up to date), and the
# speedscope viewer the export tests load (scripts/install-speedscope.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t packages < <(grep -v '^\s*#' scripts/debian-packages.txt | grep -v '^\s*$')
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${packages[@]}"
bash scripts/build-unicorn.sh
bash scripts/install-speedscope.sh
