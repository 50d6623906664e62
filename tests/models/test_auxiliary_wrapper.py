"""``AuxiliaryModel.wrapper``: an auxiliary model as a ``ModelWrapper`` (what workflows
see in ``auxiliary_model_wrappers``), for a model in-process and one served over HTTP."""

from __future__ import annotations

from pathlib import Path

import pytest

from reinforge.models import ModelWrapper
from reinforge.models.auxiliary import AuxiliaryModelConfig, build_auxiliary_model
from reinforge.models.engines.hf import HFEngine
from reinforge.models.engines.openai import OpenAIEngine
from reinforge.models.openai_api.server import ServerThread, create_app


def test_an_in_process_model_is_its_own_wrapper() -> None:
    config = AuxiliaryModelConfig(name="judge", engine="mock", mock={"replies": ["yes"]})
    model = build_auxiliary_model(config)
    try:
        assert model.wrapper is model.wrapper and model.wrapper.engine is model.engine
        assert model.wrapper.chat([{"role": "user", "content": "?"}])[0].response_text == "yes"
    finally:
        model.close()


def test_a_model_served_over_http_gets_a_token_level_wrapper(tiny_model_path: Path) -> None:
    engine = HFEngine(tiny_model_path, seed=0)
    try:
        with ServerThread(create_app(ModelWrapper(engine).openai_service)) as server:
            config = AuxiliaryModelConfig(
                name="teacher",
                engine="openai",
                model_path=str(tiny_model_path),
                openai={"base_url": server.url, "model": "tiny"},
            )
            model = build_auxiliary_model(config)
            try:
                wrapper = model.wrapper
                assert isinstance(wrapper.engine, OpenAIEngine) and model.wrapper is wrapper
                (exp,) = wrapper.chat([{"role": "user", "content": "hi"}], max_tokens=4)
                assert exp.response_length > 0 and len(exp.logprobs) == exp.response_length
                with pytest.raises(NotImplementedError, match="temperature 1 only"):
                    wrapper.logprobs(exp.tokens, temperature=0.5)
            finally:
                model.close()
    finally:
        engine.close()


def test_a_served_model_without_a_tokenizer_says_what_it_needs() -> None:
    config = AuxiliaryModelConfig(
        name="far",
        engine="openai",
        model_path="no-such-model-xyz",
        openai={"base_url": "http://h:1"},
    )
    model = build_auxiliary_model(config)
    try:
        with pytest.raises(RuntimeError, match="needs the model's tokenizer, read from model_path"):
            _ = model.wrapper
    finally:
        model.close()
