#!/bin/bash
# The real-kernel lane: build test binaries on the host (the guest's emulated CPUs are far too
# slow to compile), then run them under a Debian 6.12 kernel in qemu, where /dev/dma_heap/system,
# /dev/udmabuf and vivid's /dev/video* exist. Any guest failure fails this script.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

# Each entry: cargo test selector. Host tests that branch on availability run here too, so the
# same assertions are checked with a DMA heap present.
build_tests() {
  { cargo test --features edgefirst-tensor/kernel-tests -p edgefirst-tensor \
      --test kernel_dma --test kernel_image --test memory --test image --no-run --message-format=json
    cargo test --features gstedgefirst/kernel-tests -p gstedgefirst \
      --test kernel_v4l2 --test pool --test fd_leak --test reliability --test camera_path --test padding --test batch --test transport --no-run --message-format=json
  } 2>/dev/null |
    python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])'
}
mapfile -t bins < <(build_tests)
cargo build -q -p gstedgefirst --example pool-roundtrip
example=$root/target/debug/examples/pool-roundtrip
[ ${#bins[@]} -ge 12 ] || { echo "kernel lane: could not build the test binaries" >&2; exit 1; }

# The guest runs on this machine's root: a registry scanned here saves it a slow plugin scan
# under emulation.
export GST_REGISTRY=$root/target/gst-registry-lane.bin
gst-inspect-1.0 video4linux2 >/dev/null

cat > target/kernel-lane.sh <<EOS
set -u
export GST_REGISTRY=$GST_REGISTRY GST_REGISTRY_UPDATE=no
# Emulated CPUs: the long fd-count run is the host's job; here it checks DMA-BUFs over 1000 frames.
export EDGEFIRST_TRANSPORT_FRAMES=1000
echo "kernel lane: \$(uname -r), heaps: \$(ls /dev/dma_heap | tr '\n' ' '), video: \$(ls /dev/video* 2>/dev/null | tr '\n' ' ')"
fail=0
for b in ${bins[*]}; do
  echo "=== \$(basename \$b)"
  # The batch tests with a live source measure the element's latency timeout against a live
  # clock; under TCG a live source can start seconds late (CI saw a 2 s latency run out), so
  # they are the host's job. The batch's DMA-BUF and bit-exact slot tests still run here.
  skip=""
  case "\$(basename \$b)" in batch-*) skip="--skip live" ;; esac
  "\$b" --test-threads=1 --nocapture \$skip || fail=1
done
echo "=== pool-roundtrip on DMA-BUF"
$example NV12 322 240 4 && $example RGBA 1920 1080 2 || fail=1
exit \$fail
EOS
QLANE_MODULES=${QLANE_MODULES:-'vivid n_devs=2 multiplanar=1,2'} \
  tests/kernel/run-in-kernel.sh "bash $root/target/kernel-lane.sh"
