"""A small generated image folder (class-per-subfolder JPEGs) to try packing and staging without data.

Each class is a striped pattern with its own colour and stripe angle, jittered per image and
noised, so a CNN can learn it and JPEG compresses it like a photo rather than like flat colour.
Deterministic: the same arguments give the same files.
"""
from __future__ import annotations

import math
import random
from pathlib import Path


def make_folder(out: Path, classes: int = 4, per_class: int = 48, size: int = 48, seed: int = 0) -> int:
    """Write out/<class>/<n>.jpg; the number of images written."""
    import numpy as np
    from PIL import Image

    rng = random.Random(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32) / size * 2 * math.pi
    for label in range(classes):
        folder = out / f"class-{label:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        colour = np.array([rng.uniform(40, 215) for _ in range(3)], np.float32)
        angle, freq = label * math.pi / classes, 2 + 3 * label / max(1, classes - 1)
        for n in range(per_class):
            a, phase = angle + rng.gauss(0, 0.1), rng.uniform(0, 2 * math.pi)
            wave = np.cos(freq * (xx * math.cos(a) + yy * math.sin(a)) + phase)[..., None]
            noise = np.random.default_rng(seed * 100_003 + label * 10_007 + n).normal(0, 18, (size, size, 3))
            pixels = np.clip(colour + 60 * wave + noise, 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(folder / f"{n:05d}.jpg", "JPEG", quality=90)
    return classes * per_class
