#!/bin/bash
# Installs what building and testing need on a Debian 12 machine (run as root). Idempotent: only
# missing packages are fetched, so it is cheap to call from every entry script.
set -euo pipefail
pkgs=(libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev gstreamer1.0-tools
      gstreamer1.0-plugins-base gstreamer1.0-plugins-good libglib2.0-dev pkg-config
      python3 python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0 meson ninja-build gcc
      libyuv-dev   # libyuv: a reference row in the conversion benchmark only
      python3-opencv python3-pil)  # the resampling presets' golden outputs (tests/golden)
aarch64=0
for arg in "$@"; do
  case "$arg" in
    # The kernel lane boots a real kernel under qemu.
    --kernel-lane) pkgs+=(qemu-system-x86 busybox-static kmod xz-utils) ;;
    # The tensor crate is also built for aarch64 and its tests run under qemu-user; llvm-19's
    # llvm-mca has the Neoverse N1 (Cortex-A76) model that scripts/neon-mca.sh needs.
    --aarch64) pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user llvm-19); aarch64=1 ;;
    *) echo "deps: unknown option $arg" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2
  apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
command -v cargo >/dev/null || { echo "deps: cargo (rustup) is required" >&2; exit 1; }
for c in rustfmt clippy; do
  cargo "${c/rustfmt/fmt}" --version >/dev/null 2>&1 || rustup component add "$c"
done
if [ "$aarch64" = 1 ] && ! rustup target list --installed | grep -qx aarch64-unknown-linux-gnu; then
  rustup target add aarch64-unknown-linux-gnu
fi
