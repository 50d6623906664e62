"""The check that vLLM expanded an image prompt into reinforge's prompt ids, without a
server: ``parse_generate`` fed generate responses (no vLLM needed)."""

from __future__ import annotations

import logging

import pytest

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.openai.protocol import ServerProtocolError
from reinforge.models.engines.vllm.multimodal import parse_generate

PROMPT = [1, 2, 3, 99, 99, 99, 4]  # three image tokens where the placeholder was
LOGGER = "reinforge.models.engines.vllm.multimodal"


def _body(prompt_ids: list[int] | None) -> dict:
    body: dict = {
        "choices": [
            {
                "index": 0,
                "token_ids": [7, 8],
                "logprobs": {"content": [{"logprob": -0.5}, {"logprob": -1.25}]},
                "finish_reason": "length",
            }
        ]
    }
    if prompt_ids is not None:
        body["prompt_token_ids"] = prompt_ids
    return body


def test_the_same_expansion_is_accepted() -> None:
    (completion,) = parse_generate(_body(list(PROMPT)), SamplingParams(), "http://s:1", PROMPT)
    assert completion.token_ids == [7, 8] and completion.logprobs == [-0.5, -1.25]
    assert completion.finish_reason == "length"


@pytest.mark.parametrize(
    "expanded",
    [
        [1, 2, 3, 99, 99, 4],  # fewer image tokens (another image size or processor)
        [1, 2, 3, 99, 99, 99, 99, 4],  # more
        [1, 2, 3, 98, 98, 98, 4],  # as many, other ids (another image token)
    ],
)
def test_another_expansion_is_refused(expanded: list[int]) -> None:
    with pytest.raises(ServerProtocolError, match=r"server http://s:1 expanded the images"):
        parse_generate(_body(expanded), SamplingParams(), "http://s:1", PROMPT)


def test_a_server_without_prompt_ids_is_warned_about_once(caplog) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    for _ in range(3):
        (completion,) = parse_generate(_body(None), SamplingParams(), "http://quiet:2", PROMPT)
        assert completion.token_ids == [7, 8]
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]
    assert "http://quiet:2" in warnings[0].getMessage()
    assert "prompt_token_ids" in warnings[0].getMessage()
