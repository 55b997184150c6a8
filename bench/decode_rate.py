"""Measure how many training images one CPU core prepares per second (decode + augment), by resolution.

The advisor (tools/advisor) caps a node's throughput at what its vCPUs can feed the GPUs; the
per-core rates in components/data/perf.yaml (`cpu:`) come from this script. Each case decodes a
synthetic JPEG of a typical source size for that kind of data set, applies the usual training
augmentation (random resized crop to the training resolution, horizontal flip), and converts it to
a normalised float32 CHW array, in one process. The CIFAR case starts from a raw 32x32 array (CIFAR
ships arrays, not JPEGs). Prints the median of several rounds, in images/s per core.

Run: .venv/bin/python bench/decode_rate.py [--rounds 5] [--images 100]   (needs Pillow and numpy)
"""
from __future__ import annotations

import argparse
import io
import platform
import random
import statistics
import sys
import time

import numpy as np

try:
    from PIL import Image
except ImportError:  # Pillow is a dev-only dependency: say so rather than fail `make bench`
    print("decode_rate.py skipped: needs Pillow (pip install Pillow)")
    sys.exit(0)

MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32) * 255
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32) * 255

# (name, source width, height, training resolution, stored as JPEG?)
CASES = (
    ("cifar-like 32 (raw array)", 32, 32, 32, False),
    ("imagenet-like 500x375 -> 224", 500, 375, 224, True),
    ("medical-like 512x512 -> 512", 512, 512, 512, True),
    ("coco-like 640x480 -> 640", 640, 480, 640, True),
)


def natural_image(width: int, height: int, seed: int) -> np.ndarray:
    """Smooth structure plus fine noise: compresses like a photo (pure noise would not)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    channels = []
    for _ in range(3):
        field = np.zeros((height, width), np.float32)
        for _ in range(6):
            fx, fy, phase = rng.uniform(0.002, 0.05), rng.uniform(0.002, 0.05), rng.uniform(0, 6.3)
            field += np.sin(x * fx + y * fy + phase)
        channels.append(field)
    image = np.stack(channels, -1)
    image = (image - image.min()) / (np.ptp(image) + 1e-6) * 200 + rng.normal(0, 12, image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def encoded(width: int, height: int, seed: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(natural_image(width, height, seed)).save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def random_resized_crop(image: Image.Image, size: int, rng: random.Random) -> Image.Image:
    width, height = image.size
    area = width * height * rng.uniform(0.08, 1.0)
    ratio = rng.uniform(3 / 4, 4 / 3)
    w = min(width, int(round((area * ratio) ** 0.5)))
    h = min(height, int(round((area / ratio) ** 0.5)))
    left, top = rng.randint(0, width - w), rng.randint(0, height - h)
    return image.resize((size, size), Image.BILINEAR, box=(left, top, left + w, top + h))


def prepare(source, size: int, jpeg: bool, rng: random.Random) -> np.ndarray:
    if jpeg:
        image = Image.open(io.BytesIO(source)).convert("RGB")
        image = random_resized_crop(image, size, rng)
        array = np.asarray(image, dtype=np.float32)
    else:
        array = source.astype(np.float32)
    if rng.random() < 0.5:
        array = array[:, ::-1]
    return np.ascontiguousarray(((array - MEAN) / STD).transpose(2, 0, 1))


def rate(case, rounds: int, images: int) -> tuple[float, int]:
    _, width, height, size, jpeg = case
    sources = [encoded(width, height, seed) if jpeg else natural_image(width, height, seed) for seed in range(8)]
    rng = random.Random(0)
    for source in sources:  # warm-up
        prepare(source, size, jpeg, rng)
    results = []
    for _ in range(rounds):
        start = time.perf_counter()
        for index in range(images):
            prepare(sources[index % len(sources)], size, jpeg, rng)
        results.append(images / (time.perf_counter() - start))
    size_bytes = len(sources[0]) if jpeg else sources[0].nbytes
    return statistics.median(results), size_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--images", type=int, default=100)
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()},"
          f" Pillow {Image.__version__}, numpy {np.__version__}; one process, median of {args.rounds} rounds")
    for case in CASES:
        median, size_bytes = rate(case, args.rounds, args.images)
        print(f"{case[0]:<32} source {size_bytes / 1024:7.1f} KiB  {median:8.1f} images/s per core")


if __name__ == "__main__":
    main()
