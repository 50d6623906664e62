"""Images from paths, file:// and data: URLs, bytes and PIL objects; never from the network."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from reinforge.models.vision import MediaInputError, has_media, load_image, split_media


def _png_bytes(colour: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_every_local_form_loads(tmp_path: Path) -> None:
    raw = _png_bytes()
    (tmp_path / "a.png").write_bytes(raw)
    data_url = "data:image/png;base64," + base64.b64encode(raw).decode()
    forms = [
        raw,
        data_url,
        str(tmp_path / "a.png"),
        (tmp_path / "a.png").as_uri(),
        {"url": data_url},
        {"bytes": raw},
        Image.open(io.BytesIO(raw)),
    ]
    for form in forms:
        image = load_image(form)
        assert image.size == (8, 6) and image.mode == "RGB"
    assert load_image("a.png", base_dir=tmp_path).size == (8, 6)


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("http://example.com/x.png", "no network access"),
        ("https://example.com/x.png", "no network access"),
        ("ftp://example.com/x.png", "not supported"),
        ("/does/not/exist.png", "does not exist"),
        ("data:text/plain;base64,aGk=", "not a data:image"),
        ("data:image/png;base64,aGk=", "not a readable image"),
        (12, "cannot read an image"),
    ],
)
def test_unusable_sources_say_why(source: object, reason: str) -> None:
    with pytest.raises(MediaInputError, match=reason):
        load_image(source)


def test_unreadable_file(tmp_path: Path) -> None:
    (tmp_path / "x.png").write_text("not an image")
    with pytest.raises(MediaInputError, match="not a readable image"):
        load_image(tmp_path / "x.png")


def test_split_media_keeps_order_and_records_json_safe_messages() -> None:
    pil = Image.new("RGB", (4, 4), "blue")
    messages = [
        {"role": "system", "content": "Count."},
        {
            "role": "user",
            "content": [
                {"type": "image", "image": pil},
                {"type": "text", "text": "and"},
                {
                    "type": "image_url",
                    "image_url": {
                        "url": "data:image/png;base64," + base64.b64encode(_png_bytes()).decode()
                    },
                },
            ],
        },
    ]
    assert has_media(messages) and not has_media(messages[:1])
    media = split_media(messages)
    assert [im.getpixel((0, 0)) for im in media.images] == [(0, 0, 255), (255, 0, 0)]
    assert media.for_template[1]["content"] == [
        {"type": "image"},
        {"type": "text", "text": "and"},
        {"type": "image"},
    ]
    recorded = media.for_record[1]["content"]
    assert recorded[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert recorded[2] == messages[1]["content"][2]


def test_a_media_part_without_payload_is_refused() -> None:
    with pytest.raises(MediaInputError, match="names no image"):
        split_media([{"role": "user", "content": [{"type": "image"}]}])
