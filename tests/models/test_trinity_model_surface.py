"""The ModelWrapper surface Trinity-RFT workflows use: ``config``, ``model_path``,
``get_message_token_len``, ``convert_messages_to_experience`` and a tokenizer whose
``encode`` takes ``add_special_tokens``, used the way Trinity workflows use them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reinforge.models import InferenceModelConfig, ModelWrapper, create_engine
from reinforge.models.engines.mock import MockEngine
from reinforge.models.wrapper.chat_prompts import ContextLengthError
from reinforge.trinity.common.config import InferenceModelConfig as TrinityConfig
from reinforge.trinity.common.models.model import ModelWrapper as TrinityModelWrapper

MESSAGES = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "What is 2 + 3?"},
]


def _conversation(model: ModelWrapper) -> list[dict[str, str]]:
    """Two turns called on the model directly, the messages assembled by hand."""
    messages = list(MESSAGES)
    for question in ("And 4 + 4?", None):
        reply = model.chat(messages, n=1, max_tokens=8)[0].response_text
        messages.append({"role": "assistant", "content": reply})
        if question:
            messages.append({"role": "user", "content": question})
    return messages


def test_config_carries_the_settings_trinity_workflows_read() -> None:
    model = TrinityModelWrapper(MockEngine(max_model_len=512), default_max_tokens=64)
    assert isinstance(model.config, TrinityConfig) and TrinityConfig is InferenceModelConfig
    assert model.config.trust_remote_code is False
    assert model.config.max_model_len == 512 and model.config.max_response_tokens == 64
    assert model.config.engine_type == "mock" and model.model_config is model.config
    # the byte tokenizer has no folder: the path is the model's name
    assert model.config.model_path == model.model_path == "MockEngine"


def test_message_token_len_is_the_prompt_a_chat_sends() -> None:
    model = ModelWrapper(MockEngine(default_reply="5"))

    async def run() -> tuple[int, int]:
        length = await model.get_message_token_len(MESSAGES)
        (exp,) = await model.chat_async(MESSAGES, n=1)
        return length, exp.prompt_length

    length, prompt_length = asyncio.run(run())
    assert length == prompt_length > 0


def test_encode_takes_add_special_tokens() -> None:
    tokenizer = ModelWrapper(MockEngine()).tokenizer
    ids = tokenizer.encode("```Up```", add_special_tokens=False)
    assert ids == tokenizer.encode("```Up```") and tokenizer.decode(ids) == "```Up```"


def test_model_path_of_a_model_tokenizer_loads_offline(tiny_model_path: Path) -> None:
    from transformers import AutoTokenizer

    engine = create_engine("mock", "tiny-random-smollm2", options={"tokenizer": "model"})
    model = ModelWrapper(engine, model_name="tiny-random-smollm2")
    assert Path(model.model_path) == tiny_model_path
    tokenizer = AutoTokenizer.from_pretrained(
        model.model_path, trust_remote_code=model.config.trust_remote_code
    )
    text = "</think> the answer"
    assert tokenizer.encode(text, add_special_tokens=False) == model.tokenizer.encode(
        text, add_special_tokens=False
    )


def test_converted_conversation_masks_the_assistant_turns_and_scores_them() -> None:
    model = ModelWrapper(MockEngine(replies={"4 \\+ 4": "8", "2 \\+ 3": "5"}))
    messages = _conversation(model)
    exp = model.convert_messages_to_experience(messages)
    assert exp.info["retokenized"] is True and exp.messages == messages
    assert exp.response_text == "5\n8"
    reply_ids = exp.response_tokens[exp.action_mask].tolist()
    assert model.tokenizer.decode(reply_ids, skip_special_tokens=False) == (
        "5<|im_end|>\n8<|im_end|>\n"
    )
    assert not bool(exp.action_mask.all())  # the user turn between is masked out
    assert bool((exp.logprobs[~exp.action_mask] == 0).all())
    assert bool((exp.logprobs[exp.action_mask] < 0).all())
    assert exp.prompt_text.endswith("<|im_start|>assistant\n")
    # the prompt is the one the first call sent
    first = model.chat(MESSAGES, n=1)[0]
    assert exp.tokens[: exp.prompt_length].tolist() == first.tokens[: first.prompt_length].tolist()


def test_converted_conversation_is_cut_at_the_context_length() -> None:
    model = ModelWrapper(MockEngine(default_reply="x" * 30, max_model_len=120))
    messages = [*MESSAGES[1:], {"role": "assistant", "content": "y" * 200}]
    exp = asyncio.run(model.convert_messages_to_experience_async(messages))
    assert exp.truncate_status == "response_truncated" and len(exp.tokens) == 119
    with pytest.raises(ContextLengthError):
        model.convert_messages_to_experience(
            [{"role": "user", "content": "q" * 200}, {"role": "assistant", "content": "a"}]
        )
    with pytest.raises(ValueError, match="no assistant message"):
        model.convert_messages_to_experience(MESSAGES)


@pytest.mark.slow
def test_the_real_model_path_config_and_token_lengths(real_model_path: Path) -> None:
    """A ThinkingBudget-style set-up on the real model: its own tokenizer from
    ``model.model_path``, token ids of a marker, the prompt length before each turn."""
    from transformers import AutoTokenizer

    from reinforge.models.engines.hf import HFEngine

    with HFEngine(real_model_path, device="cpu", seed=0) as engine:
        model = ModelWrapper(engine, model_name="smollm2-135m-instruct", default_max_tokens=16)
        assert Path(model.model_path) == real_model_path
        tokenizer = AutoTokenizer.from_pretrained(
            model.model_path, trust_remote_code=model.config.trust_remote_code
        )
        marker = tokenizer.encode("</think>", add_special_tokens=False)
        assert marker and marker == model.tokenizer.encode("</think>", add_special_tokens=False)
        assert model.config.max_model_len == engine.max_model_len

        async def run() -> tuple[int, int, int]:
            first = await model.get_message_token_len(MESSAGES)
            (exp,) = await model.chat_async(MESSAGES, n=1, temperature=0.0)
            longer = [*MESSAGES, {"role": "assistant", "content": exp.response_text}]
            second = await model.get_message_token_len([*longer, {"role": "user", "content": "?"}])
            return first, exp.prompt_length, second

        first, prompt_length, second = asyncio.run(run())
        assert first == prompt_length and second > first

        messages = _conversation(model)
        exp = model.convert_messages_to_experience(messages)
        assert exp.info["retokenized"] is True
        assert exp.logprobs.shape == exp.action_mask.shape
        assert bool((exp.logprobs[exp.action_mask] <= 0).all())
        assert bool(exp.action_mask.any()) and not bool(exp.action_mask.all())
