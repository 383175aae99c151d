#!/bin/bash
# The main job: build the plugin, then run a camera-shaped frame through edgefirsttensor in a
# real gst-launch-1.0 pipeline and show what the model receives.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release -p gstedgefirst
export GST_PLUGIN_PATH=$PWD/target/release GST_REGISTRY=$PWD/target/gst-registry-demo.bin
gst-inspect-1.0 edgefirst | grep -E 'edgefirst|Filename'
# RGB frames that already are the model input pass through as other/tensors without a copy.
gst-launch-1.0 -v videotestsrc num-buffers=60 ! video/x-raw,format=RGB,width=640,height=480,framerate=30/1 \
  ! edgefirsttensor ! other/tensors ! fakesink > target/demo.log 2>&1
grep -m1 'edgefirsttensor0.GstPad:src: caps' target/demo.log
echo "demo: 60 frames reached the model as other/tensors through edgefirsttensor"
