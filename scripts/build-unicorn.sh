#!/usr/bin/env bash
# Builds the Unicorn engine emuprof links: the exact source of the
# unicorn-engine-sys crate that Cargo.lock pins, with emuprof's three patch
# series applied in order with no fuzz (emu/unicorn/fixes, speed, then
# instrumentation: see docs/architecture.md), x86 only, installed into
# target/unicorn.
#
# .cargo/config.toml points pkg-config at target/unicorn/lib/pkgconfig, and
# unicorn-engine-sys links a Unicorn that pkg-config finds instead of building
# its own. Without this step cargo still builds, with stock Unicorn: the same
# profiles, about 1.5x slower on memory-heavy code (emu/build.rs warns).
#
# Needs cmake, make, patch, python3 and a C compiler. Does nothing when the installed build
# already matches the crate version, the patches and this script.
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
prefix="$repo/target/unicorn"
work="$repo/target/unicorn-build"

cd "$repo"
cargo fetch --quiet
crate_dir="$(cargo metadata --format-version 1 --locked | python3 -c '
import json, os, sys
meta = json.load(sys.stdin)
sys_crate = next(p for p in meta["packages"] if p["name"] == "unicorn-engine-sys")
print(os.path.dirname(sys_crate["manifest_path"]))
')"

series=(emu/unicorn/fixes/*.patch emu/unicorn/speed/*.patch emu/unicorn/instrumentation/*.patch)
stamp="$(cat "$crate_dir/Cargo.toml" "${series[@]}" "$0" | sha256sum | cut -d' ' -f1)"
if [[ -f "$prefix/stamp" && "$(cat "$prefix/stamp")" == "$stamp" ]]; then
    echo "build-unicorn: $prefix is up to date"
    exit 0
fi

echo "build-unicorn: building patched Unicorn from $crate_dir (a few minutes)"
rm -rf "$work" "$prefix"
mkdir -p "$work"
cp -r "$crate_dir" "$work/src"
chmod -R u+w "$work/src"
for patch in "${series[@]}"; do
    patch --quiet --fuzz=0 --directory="$work/src" -p1 < "$patch" ||
        { echo "build-unicorn: $patch does not apply exactly" >&2; exit 1; }
done
cmake -S "$work/src" -B "$work/build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR=lib \
    -DUNICORN_ARCH=x86 \
    -DUNICORN_BUILD_TESTS=OFF \
    -DUNICORN_INSTALL=ON \
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON >"$work/cmake.log"
cmake --build "$work/build" --parallel "$(nproc)" >"$work/build.log"
cmake --install "$work/build" >"$work/install.log"
echo "$stamp" >"$prefix/stamp"
rm -rf "$work"
# unicorn-engine-sys decides at build time which Unicorn to link: make cargo
# run its build script again.
cargo clean --quiet --package unicorn-engine-sys
cargo clean --quiet --package unicorn-engine-sys --release
echo "build-unicorn: installed $prefix"
