#!/bin/bash
# The main job: build the plugin, turn a 1280x720 NV12 camera-style stream into a 640x640
# letterboxed model input with edgefirsttensor, and write what the model sees to a PNG.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cargo build --release -p gstedgefirst
export GST_PLUGIN_PATH=$PWD/target/release GST_REGISTRY=$PWD/target/gst-registry-demo.bin
gst-inspect-1.0 edgefirst | grep -E 'edgefirst|Filename'
# 60 frames into a float32 CHW tensor with ImageNet mean/std, as a detector would take them.
gst-launch-1.0 -v videotestsrc num-buffers=60 pattern=smpte ! video/x-raw,format=NV12,width=1280,height=720,framerate=30/1 \
  ! edgefirsttensor model-width=640 model-height=640 model-layout=chw model-dtype=float32 \
    model-mean=0.485,0.456,0.406 model-std=0.229,0.224,0.225 ! other/tensors ! fakesink > target/demo.log 2>&1
grep -m1 'edgefirsttensor0.GstPad:src: caps' target/demo.log
# The same geometry as an 8-bit RGB picture: what the model sees, letterbox included.
gst-launch-1.0 -q videotestsrc num-buffers=1 pattern=smpte ! video/x-raw,format=NV12,width=1280,height=720 \
  ! edgefirsttensor model-width=640 model-height=640 ! video/x-raw,format=RGB ! pngenc ! filesink location=target/model-input.png
echo "demo: 60 frames became 640x640 float32 tensors; the model's view is in $PWD/target/model-input.png"
