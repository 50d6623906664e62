"""Generate the shape-counting taskset: small PNG images of circles and squares.

Each row asks how many circles an image shows; the image is stored inline as a
``data:image/png;base64,...`` URL under the ``image`` key, so the JSONL files are
self-contained (no image folder to keep next to them). Deterministic:

    python examples/multimodal/make_data.py        # rewrites data/train.jsonl, data/test.jsonl
"""

from __future__ import annotations

import base64
import io
import json
import random
from pathlib import Path

from PIL import Image, ImageDraw

SIZE = 64
COLOURS = ["red", "blue", "green", "orange", "purple"]
QUESTION = "<image>How many circles are in the image?"


def _free_spot(rng: random.Random, taken: list[tuple[int, int]], radius: int) -> tuple[int, int]:
    """A centre at least ``2 * radius + 2`` pixels from every shape drawn so far."""
    for _ in range(200):
        x, y = (
            rng.randint(radius + 1, SIZE - radius - 2),
            rng.randint(radius + 1, SIZE - radius - 2),
        )
        if all((x - a) ** 2 + (y - b) ** 2 > (2 * radius + 2) ** 2 for a, b in taken):
            return x, y
    raise RuntimeError("no room left for another shape")


def make_image(rng: random.Random, circles: int, squares: int) -> Image.Image:
    image = Image.new("RGB", (SIZE, SIZE), "white")
    draw = ImageDraw.Draw(image)
    taken: list[tuple[int, int]] = []
    radius = 6
    for kind in ["circle"] * circles + ["square"] * squares:
        x, y = _free_spot(rng, taken, radius)
        taken.append((x, y))
        box = (x - radius, y - radius, x + radius, y + radius)
        colour = rng.choice(COLOURS)
        if kind == "circle":
            draw.ellipse(box, fill=colour)
        else:
            draw.rectangle(box, fill=colour)
    return image


def data_url(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def rows(seed: int, count: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        circles, squares = rng.randint(1, 4), rng.randint(0, 2)
        image = make_image(rng, circles, squares)
        out.append({"question": QUESTION, "answer": str(circles), "image": data_url(image)})
    return out


def main() -> None:
    folder = Path(__file__).resolve().parent / "data"
    folder.mkdir(exist_ok=True)
    for name, seed, count in [("train", 0, 64), ("test", 1, 16)]:
        with open(folder / f"{name}.jsonl", "w") as fh:
            for row in rows(seed, count):
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
