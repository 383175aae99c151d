#!/bin/bash
# The tensor crate's and the plugin's tests under AddressSanitizer (nightly rustc, std not
# rebuilt: instrumented code is ours and our dependencies', which is where an out-of-bounds read
# of a frame would happen). Called by test.sh; alone: bash scripts/asan.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}/asan
export RUSTFLAGS="-Zsanitizer=address" RUSTDOCFLAGS="-Zsanitizer=address"
# GStreamer's own allocations are not instrumented; leak checking would report its global state.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export EDGEFIRST_FUZZ_CASES=${EDGEFIRST_FUZZ_CASES:-500}
# The long fd-flatness runs are about counting, not about memory errors: shorter here.
export EDGEFIRST_TRANSPORT_FRAMES=${EDGEFIRST_TRANSPORT_FRAMES:-2000} EDGEFIRST_NET_FRAMES=${EDGEFIRST_NET_FRAMES:-500}
# Page-fault counts include ASan's shadow pages: the tests that count faults skip that assertion.
export EDGEFIRST_NO_FAULT_COUNT=1
cargo +nightly test --target x86_64-unknown-linux-gnu --workspace --tests "$@"
