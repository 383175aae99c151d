#!/bin/bash
# What a person sees of the resampling filters: a zone plate (videotestsrc pattern=zone-plate,
# 1920x1920) through edgefirsttensor to 640x640 with `bilinear` (left: the 3x downscale aliases
# into false rings) and `bilinear-antialias` (right: PIL/torchvision's triangle filter), side by
# side in docs/zone-plate.png. Run after a build: bash scripts/zone-plate.sh [debug|release]
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-debug}
export GST_PLUGIN_PATH=$PWD/target/$profile GST_REGISTRY=$PWD/target/gst-registry-zone.bin
src="videotestsrc num-buffers=1 pattern=zone-plate kx2=160 ky2=160 kt=0 ! video/x-raw,format=RGB,width=1920,height=1920"
side() {
  echo "$src ! edgefirsttensor model-width=640 model-height=640 interpolation=$1 ! video/x-raw,format=RGB ! queue ! c.sink_$2"
}
gst-launch-1.0 -q compositor name=c sink_1::xpos=656 background=white \
    ! video/x-raw,format=RGB,width=1296,height=640 ! videoconvert ! pngenc ! filesink location=docs/zone-plate.png \
  $(side bilinear 0) $(side bilinear-antialias 1)
echo "zone plate: docs/zone-plate.png (left bilinear, right bilinear-antialias)"
