"""From a task's GenerationConfig to the engine's SamplingParams, in one function."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from dataclasses import asdict, fields
from typing import Any

import pytest

from reinforge.core import GenerationConfig
from reinforge.models.engine import SamplingParams
from reinforge.models.engines.mock import MockEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.models.wrapper.sampling_args import (
    ACCEPTED_KEYS,
    ENGINE_ONLY_KEYS,
    IGNORED_KEYS,
    rollout_kwargs,
    sampling_params,
)

MESSAGES = [{"role": "user", "content": "What is 2 + 3?"}]


class RecordingEngine(MockEngine):
    """The mock engine, keeping the SamplingParams of every request."""

    def __init__(self) -> None:
        super().__init__(policy="arithmetic")
        self.params: list[SamplingParams] = []

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Future[Any]:
        self.params.append(params)
        return super().submit(prompt_ids, params)


def test_sampling_params_are_generation_config_less_logprobs_plus_engine_only_fields() -> None:
    config_keys = {f.name for f in fields(GenerationConfig)}
    sampling_keys = {f.name for f in fields(SamplingParams)}
    assert sampling_keys == (config_keys - IGNORED_KEYS) | ENGINE_ONLY_KEYS
    accepted = ACCEPTED_KEYS
    assert accepted == config_keys | ENGINE_ONLY_KEYS


def test_every_generation_config_key_reaches_the_engine() -> None:
    engine = RecordingEngine()
    model = ModelWrapper(engine, default_max_tokens=99)
    config = GenerationConfig(
        temperature=0.5, top_p=0.9, top_k=5, max_tokens=7, n=2, logprobs=3, seed=11, stop=["\n"]
    )
    assert len(model.chat(MESSAGES, **config)) == 2
    assert len(model.generate(["1 + 2"], **asdict(config))) == 2
    assert len(asyncio.run(model.chat_async(MESSAGES, **config))) == 2
    expected = SamplingParams(
        temperature=0.5, top_p=0.9, top_k=5, max_tokens=7, n=2, seed=11, stop=["\n"]
    )
    assert engine.params == [expected] * 3


def test_unset_values_are_the_defaults() -> None:
    assert sampling_params(64, **GenerationConfig()) == SamplingParams(max_tokens=64)
    assert sampling_params(64, stop="\n", top_logprobs=2) == SamplingParams(
        max_tokens=64, stop=["\n"], top_logprobs=2
    )
    with pytest.raises(TypeError, match="unknown sampling argument 'max_response_tokens'"):
        sampling_params(64, max_response_tokens=10)


def test_rollout_kwargs_of_a_config_and_of_a_trinity_dict_agree() -> None:
    config = GenerationConfig(n=2, max_tokens=7, stop=["\n"])
    from_config = rollout_kwargs(config)
    assert from_config == {
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": -1,
        "max_tokens": 7,
        "n": 2,
        "stop": ["\n"],
    }  # None (seed) and logprobs left out
    assert rollout_kwargs(asdict(config)) == from_config == rollout_kwargs(config.copy())
    from_config["stop"].append("x")
    assert config.stop == ["\n"]  # nothing shared
