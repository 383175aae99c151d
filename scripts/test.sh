#!/bin/bash
# Every test: lint, unit and pipeline tests on the host (a bounded fuzz run among them), the plugin
# from C, Python and a meson install, the examples, the tests again under AddressSanitizer, the
# tensor crate on aarch64 (qemu-user), then the real-kernel lane.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --kernel-lane --aarch64
export CARGO_TERM_COLOR=never CARGO_TARGET_DIR=$PWD/target
root=$PWD
step() { echo; echo "=== $*"; }

step "cargo fmt --check"
cargo fmt --all --check
step "cargo clippy"
cargo clippy --workspace --all-targets --features edgefirst-tensor/kernel-tests,gstedgefirst/kernel-tests -- -D warnings
step "build (plugin .so and examples)"
cargo build --workspace --all-targets
step "unit and pipeline tests (host)"
cargo test --workspace

# A private registry so a stale system-wide one never hides our freshly built plugin.
export GST_PLUGIN_PATH=$root/target/debug GST_REGISTRY=$root/target/gst-registry.bin
step "gst-inspect-1.0 loads the built plugin"
gst-inspect-1.0 edgefirst | tee target/inspect.txt | head -20
grep -q 'Filename.*target/debug/libgstedgefirst.so' target/inspect.txt
step "the allocator, pool and tensor meta by GType name, from C and from Python"
gcc -Wall -Werror -o target/gtype_names tests/c/gtype_names.c $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-video-1.0 gstreamer-allocators-1.0)
target/gtype_names
gcc -Wall -Werror -Igst-plugin/include -o target/tensor_meta tests/c/tensor_meta.c $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-app-1.0)
target/tensor_meta
/usr/bin/python3 tests/python/gtype_names.py
/usr/bin/python3 tests/python/pool_kept_samples.py
step "examples"
cargo run -q -p gstedgefirst --example pool-roundtrip
cargo run -q -p edgefirst-tensor --example tensor-info
step "meson build installs a plugin gst-inspect-1.0 loads"
rm -rf target/meson target/meson-install
meson setup target/meson --prefix="$root/target/meson-install" --libdir=lib --buildtype=release >/dev/null
meson compile -C target/meson
meson install -C target/meson >/dev/null
GST_PLUGIN_PATH=$root/target/meson-install/lib/gstreamer-1.0 GST_REGISTRY=$root/target/gst-registry-meson.bin \
  gst-inspect-1.0 edgefirst > target/inspect-meson.txt
grep -q "Filename.*meson-install/lib/gstreamer-1.0/libgstedgefirst.so" target/inspect-meson.txt
echo "meson: $(grep Filename target/inspect-meson.txt | xargs)"
unset GST_PLUGIN_PATH GST_REGISTRY

step "AddressSanitizer over the tensor and plugin tests (nightly)"
# -Zsanitizer needs the nightly toolchain this machine image carries; none can be fetched here.
if cargo +nightly --version >/dev/null 2>&1; then
  bash scripts/asan.sh
else
  echo "asan: SKIPPED, no nightly toolchain on this machine (rustup toolchain list)"
fi

step "tensor crate on aarch64: clippy, then its tests cross-built and run under qemu-user"
# The baseline (non-AVX2) kernels are what aarch64 runs, auto-vectorized for NEON.
cargo clippy -p edgefirst-tensor --target aarch64-unknown-linux-gnu --all-targets -- -D warnings
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \
EDGEFIRST_NO_FAULT_COUNT=1 \
  cargo test --release -p edgefirst-tensor --target aarch64-unknown-linux-gnu

step "kernel lane (real 6.12 kernel under qemu)"
tests/kernel/run.sh
echo
echo "all tests passed"
