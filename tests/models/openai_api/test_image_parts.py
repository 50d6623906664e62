"""``image_url`` content parts through the in-process OpenAI client (tiny VLM).

Data URLs and local files (a path or ``file://``) are read; an ``http(s)`` URL is a
400 (no network), so is a missing file, and so is an image sent to a text-only model.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import openai
import pytest
from PIL import Image, ImageDraw

from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper


def _png(path: Path | None = None) -> bytes:
    image = Image.new("RGB", (40, 30), "white")
    ImageDraw.Draw(image).ellipse((5, 5, 20, 20), fill="red")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    if path is not None:
        path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


def _ask(client: openai.OpenAI, url: str) -> Any:
    return client.chat.completions.create(
        model="m",
        max_tokens=3,
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is this?"},
                    {"type": "image_url", "image_url": {"url": url}},
                ],
            }
        ],
    )


@pytest.fixture(scope="module")
def vlm(tiny_vlm_path: Path) -> Any:
    engine = HFEngine(tiny_vlm_path, batch_window_ms=1)
    yield ModelWrapper(engine, enable_history=True)
    engine.close()


def test_data_urls_and_local_files_are_read(vlm: ModelWrapper, tmp_path: Path) -> None:
    client = vlm.get_openai_client()
    data_url = "data:image/png;base64," + base64.b64encode(_png()).decode()
    file = tmp_path / "circle.png"
    _png(file)
    for url in (data_url, str(file), file.as_uri()):
        resp = _ask(client, url)
        assert resp.choices[0].message.content is not None
    exps = vlm.extract_experience_from_history()
    assert len(exps) == 3
    assert all(exp.multi_modal_inputs is not None for exp in exps)
    assert resp.usage.prompt_tokens == exps[-1].prompt_length
    # the same picture gives the same model inputs, however it was sent
    first = exps[0].multi_modal_inputs["pixel_values"]
    assert all((e.multi_modal_inputs["pixel_values"] == first).all() for e in exps)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://example.com/cat.png", "no network access"),
        ("/nonexistent/cat.png", "does not exist"),
        ("data:image/png;base64,!!!", "bad payload"),
    ],
)
def test_unusable_images_are_bad_requests(vlm: ModelWrapper, url: str, reason: str) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        _ask(vlm.get_openai_client(), url)
    assert info.value.status_code == 400
    assert reason in str(info.value)


def test_images_for_a_text_only_model_are_bad_requests(tiny_model_path: Path) -> None:
    engine = HFEngine(tiny_model_path, batch_window_ms=1)
    try:
        client = ModelWrapper(engine).get_openai_client()
        data_url = "data:image/png;base64," + base64.b64encode(_png()).decode()
        with pytest.raises(openai.BadRequestError) as info:
            _ask(client, data_url)
        assert info.value.status_code == 400
        assert "text-only" in str(info.value)
    finally:
        engine.close()
