#!/bin/bash
# Every test: lint, unit and pipeline tests on the host, then the real-kernel lane.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh --kernel-lane
export CARGO_TERM_COLOR=never
step() { echo; echo "=== $*"; }

step "cargo fmt --check"
cargo fmt --all --check
step "cargo clippy"
cargo clippy --workspace --all-targets --features edgefirst-tensor/kernel-tests -- -D warnings
step "build (plugin .so and examples)"
cargo build --workspace --all-targets
step "unit and pipeline tests (host)"
cargo test --workspace
step "gst-inspect-1.0 loads the built plugin"
GST_PLUGIN_PATH=$PWD/target/debug GST_REGISTRY=$PWD/target/gst-registry.bin \
  gst-inspect-1.0 edgefirst | tee target/inspect.txt | head -20
grep -q 'Filename.*libgstedgefirst.so' target/inspect.txt
step "kernel lane (real 6.12 kernel under qemu)"
tests/kernel/run.sh
echo
echo "all tests passed"
