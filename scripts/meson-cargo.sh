#!/bin/bash
# meson's build step: cargo builds the plugin; the .so is copied to where meson expects it.
# CARGO_TARGET_DIR, when set, shares an existing cargo build instead of starting a fresh one.
set -euo pipefail
src=$1 build=$2 buildtype=$3 out=$4
target=${CARGO_TARGET_DIR:-$build/cargo}
profile=release; flag=--release
[ "$buildtype" = debug ] && { profile=debug; flag=; }
cargo build $flag -p gstedgefirst --manifest-path "$src/Cargo.toml" --target-dir "$target"
cp "$target/$profile/libgstedgefirst.so" "$out"
