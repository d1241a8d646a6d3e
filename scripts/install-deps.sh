#!/usr/bin/env bash
# Installs what emuprof needs to build and test on a fresh Debian machine:
# cmake + libclang (to build Unicorn), musl-tools (musl-static testprogs),
# valgrind (Callgrind cross-checks), graphviz (DOT -> SVG), busybox-static and
# qemu-user (real-program tests and benchmarks), time (peak memory in benchmarks).
set -euo pipefail
packages=(cmake libclang-dev musl-tools valgrind graphviz busybox-static qemu-user time make gcc g++)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
