"""What rLLM's own workflows read from ``self.rollout_engine`` besides
``get_model_response``: ``chat_parser.parse(...)`` for the prompt text, the tokenizer
to count it, and ``max_response_length`` for the reply budget (rLLM's
``CumulativeWorkflow`` shrinks each turn's ``max_tokens`` by how much the prompt grew)."""

from __future__ import annotations

import asyncio

from reinforge.models import MockEngine, ModelWrapper
from reinforge.workflows.episode.rollout_engine import ModelWrapperEngine


def model(max_tokens: int = 64) -> ModelWrapper:
    return ModelWrapper(
        MockEngine(replies=lambda p, i: "4", max_model_len=4096), default_max_tokens=max_tokens
    )


def test_chat_parser_renders_what_the_model_is_sent() -> None:
    wrapper = model()
    engine = ModelWrapperEngine(wrapper)
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    text = engine.chat_parser.parse(
        messages, add_generation_prompt=True, is_first_msg=True, accumulate_reasoning=True
    )
    assert text == wrapper.chat_prompts.render_text(messages, None, True)
    assert "What is 2 + 2?" in text
    assert engine.chat_parser.parse(messages) != text  # no generation prompt by default
    output = asyncio.run(engine.get_model_response(messages))
    counted = len(engine.tokenizer.encode(text, add_special_tokens=False))
    assert counted == len(output.prompt_ids)


def test_max_response_length_is_the_reply_budget() -> None:
    assert ModelWrapperEngine(model(max_tokens=48)).max_response_length == 48
    sampling = ModelWrapperEngine(model(), sampling={"max_tokens": 20})
    assert sampling.max_response_length == 20
    given = ModelWrapperEngine(model(), sampling={"max_tokens": 20}, max_response_length=12)
    assert given.max_response_length == 12
