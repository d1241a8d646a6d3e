#!/usr/bin/env bash
# Installs speedscope (the viewer, from npm: MIT) into target/speedscope, so
# tests/commands/speedscope_viewer.rs can load emuprof's speedscope export in it with
# headless Chromium. A no-op when that version is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.25.0
DIR=target/speedscope
if [ -f "$DIR/node_modules/speedscope/package.json" ] &&
    grep -q "\"version\": \"$VERSION\"" "$DIR/node_modules/speedscope/package.json"; then
    exit 0
fi
if ! command -v npm >/dev/null; then
    echo "install-speedscope: npm is missing; tests/commands/speedscope_viewer.rs will say so" >&2
    exit 0
fi
mkdir -p "$DIR"
npm install --prefix "$DIR" --no-audit --no-fund --no-save "speedscope@$VERSION"
