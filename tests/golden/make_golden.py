#!/usr/bin/python3
"""Golden outputs of the libraries the resampling presets match (docs/resampling.md), for
tensor/tests/golden.rs: OpenCV (python3-opencv) and PIL (python3-pil) resize deterministic RGB
test images, placed as the element places them (preprocess::letterbox_rect, ported below).

    /usr/bin/python3 tests/golden/make_golden.py OUT_DIR

writes OUT_DIR/<image>.rgb (raw RGB bytes), OUT_DIR/<case>.rgb (the whole destination, padding
included) and OUT_DIR/cases.txt, one case a line:

    case preset image src_w src_h fit dst_w dst_h rect_x rect_y rect_w rect_h crop_x crop_y crop_w crop_h
"""
import os
import sys

import cv2
import numpy as np
from PIL import Image

FILL = 114


def natural(w, h, seed):
    """Smooth colour gradients, sensor-like noise, hard-edged saturated shapes and thin
    text-like strokes (black and white, one and two pixels wide): what a camera sees, with the
    edges that make resampling filters differ."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    u, v = x / w, y / h
    img = np.stack([
        128 + 90 * np.sin(2.1 * np.pi * u + 0.7) * np.cos(1.3 * np.pi * v),
        120 + 100 * np.cos(1.7 * np.pi * (u + v) + 0.3),
        110 + 80 * np.sin(3.3 * np.pi * v - 1.1) + 30 * u,
    ], axis=-1)
    img += rng.normal(0, 6, img.shape)
    for _ in range(12):
        x0, y0 = rng.integers(0, w - 20), rng.integers(0, h - 20)
        x1, y1 = x0 + rng.integers(8, max(9, w // 4)), y0 + rng.integers(8, max(9, h // 4))
        img[y0:y1, x0:x1] = rng.choice([0, 255], 3) if rng.random() < 0.6 else rng.integers(0, 256, 3)
    for _ in range(40):
        # A "word": a row of glyph-sized boxes of strokes.
        x0, y0 = rng.integers(0, w - 60), rng.integers(0, h - 14)
        ink = 0 if rng.random() < 0.5 else 255
        for g in range(rng.integers(3, 8)):
            gx = x0 + 7 * g
            stroke = rng.integers(1, 3)
            if gx + 6 >= w:
                break
            if rng.random() < 0.7:
                img[y0:y0 + 11, gx:gx + stroke] = ink
            if rng.random() < 0.6:
                img[y0:y0 + stroke, gx:gx + 6] = ink
            if rng.random() < 0.5:
                img[y0 + 5:y0 + 5 + stroke, gx:gx + 6] = ink
            if rng.random() < 0.4:
                img[y0:y0 + 11, gx + 5:gx + 5 + stroke] = ink
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def zone_plate(w, h):
    """cos(k r^2), the spatial frequency rising from 0 at the centre to Nyquist at the edge
    midpoints (and past it in the corners): every frequency a filter passes or aliases. Channels
    phase-shifted so they differ."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r2 = (x - w / 2 + 0.5) ** 2 + (y - h / 2 + 0.5) ** 2
    k = np.pi / max(w, h)
    return np.stack([np.clip(np.rint(127.5 + 127.5 * np.cos(k * r2 + p)), 0, 255) for p in (0, 2.1, 4.2)],
                    axis=-1).astype(np.uint8)


def mul_div_round(a, b, c):
    q, r = divmod(a * b, c)
    return q + (1 if r >= c - r else 0)


def letterbox_rect(sw, sh, dw, dh, fit):
    """preprocess::letterbox_rect (centre placement): (rect, source crop), each (x, y, w, h)."""
    dst_wider = dw * sh >= dh * sw
    if fit == "stretch":
        return (0, 0, dw, dh), (0, 0, sw, sh)
    if fit == "center-crop":
        if dst_wider:
            w, h = sw, min(max(mul_div_round(dh, sw, dw), 1), sh)
        else:
            w, h = min(max(mul_div_round(dw, sh, dh), 1), sw), sh
        return (0, 0, dw, dh), ((sw - w) // 2, (sh - h) // 2, w, h)
    if dst_wider:
        w, h = min(max(mul_div_round(sw, dh, sh), 1), dw), dh
    else:
        w, h = dw, min(max(mul_div_round(sh, dw, sw), 1), dh)
    return ((dw - w) // 2, (dh - h) // 2, w, h), (0, 0, sw, sh)


def resize(img, w, h, preset):
    cvs = {"bilinear": cv2.INTER_LINEAR, "area": cv2.INTER_AREA, "bicubic-opencv": cv2.INTER_CUBIC}
    if preset in cvs:
        return cv2.resize(img, (w, h), interpolation=cvs[preset])
    pil = {"bilinear-antialias": Image.BILINEAR, "bicubic": Image.BICUBIC}[preset]
    return np.asarray(Image.fromarray(img, "RGB").resize((w, h), pil))


PRESETS = ["bilinear", "area", "bilinear-antialias", "bicubic", "bicubic-opencv"]
# (image, fit, destination): downscales 1.5x to 4x, upscales, letterbox, stretch (with unequal
# axes, and one axis up while the other goes down), centre crop.
CASES = [
    ("natural", "letterbox", 640, 640),     # 960x720 -> 640x480: 1.5x
    ("natural", "stretch", 320, 240),       # 3x
    ("natural", "stretch", 240, 200),       # 4x, 3.6x
    ("natural", "letterbox", 300, 300),     # 3.2x
    ("natural", "center-crop", 224, 224),   # 720x720 crop -> 224: 3.2x
    ("natural", "stretch", 1200, 400),      # 0.8x wide, 1.8x high
    ("small", "stretch", 400, 300),         # 160x120 -> 2.5x up
    ("small", "letterbox", 512, 512),       # 3.2x up
    ("zone", "stretch", 256, 256),          # 512 -> 256: 2x
    ("zone", "letterbox", 200, 170),        # 512 -> 170: 3.01x
    ("zone", "stretch", 290, 300),          # 1.77x, 1.71x
    ("zone_small", "stretch", 320, 320),    # 128 -> 320: 2.5x up
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    images = {
        "natural": natural(960, 720, 1),
        "small": natural(160, 120, 2),
        "zone": zone_plate(512, 512),
        "zone_small": zone_plate(128, 128),
    }
    for name, img in images.items():
        with open(os.path.join(out, name + ".rgb"), "wb") as f:
            f.write(np.ascontiguousarray(img).tobytes())
    lines = []
    for image, fit, dw, dh in CASES:
        img = images[image]
        sh, sw = img.shape[:2]
        (rx, ry, rw, rh), (cx, cy, cw, ch) = letterbox_rect(sw, sh, dw, dh, fit)
        crop = np.ascontiguousarray(img[cy:cy + ch, cx:cx + cw])
        for preset in PRESETS:
            dst = np.full((dh, dw, 3), FILL, np.uint8)
            dst[ry:ry + rh, rx:rx + rw] = resize(crop, rw, rh, preset)
            case = f"{image}-{fit}-{dw}x{dh}-{preset}"
            with open(os.path.join(out, case + ".rgb"), "wb") as f:
                f.write(dst.tobytes())
            lines.append(f"{case} {preset} {image} {sw} {sh} {fit} {dw} {dh} {rx} {ry} {rw} {rh} {cx} {cy} {cw} {ch}")
    with open(os.path.join(out, "cases.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"golden: {len(lines)} cases from OpenCV {cv2.__version__} and Pillow {Image.__version__ if hasattr(Image, '__version__') else ''} in {out}")


if __name__ == "__main__":
    main()
