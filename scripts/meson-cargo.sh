#!/bin/bash
# meson's build step: cargo builds one package's cdylib; the .so is copied to where meson expects
# it. Arguments: source root, build dir, meson buildtype, output path, cargo package (default the
# plugin). CARGO_TARGET_DIR, when set, shares an existing cargo build instead of starting a fresh one.
set -euo pipefail
src=$1 build=$2 buildtype=$3 out=$4 package=${5:-gstedgefirst}
target=${CARGO_TARGET_DIR:-$build/cargo}
profile=release; flag=--release
[ "$buildtype" = debug ] && { profile=debug; flag=; }
cargo build $flag -p "$package" --manifest-path "$src/Cargo.toml" --target-dir "$target"
cp "$target/$profile/$(basename "$out")" "$out"
