#!/usr/bin/env bash
# One command from a fresh machine to a profile: installs the build
# dependencies, builds emuprof and the test programs, profiles one of them and
# prints the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cargo build --release --quiet
make -s -C testprogs OUT="$PWD/target/testprogs" >/dev/null
prog=target/testprogs/mutual.musl.O2
[ -x "$prog" ] || prog=target/testprogs/mutual.glibc.O2
echo "== emuprof $prog"
target/release/emuprof -o target/demo.json "$prog"
echo
echo "== emuprof report --flat target/demo.json"
target/release/emuprof report target/demo.json --flat | head -30
echo
echo "== emuprof report --tree target/demo.json"
target/release/emuprof report target/demo.json --tree | head -40
