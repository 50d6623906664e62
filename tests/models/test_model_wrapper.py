"""ModelWrapper over the mock engine and the tiny HF model: Experiences, validation, history."""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Iterator
from concurrent.futures import CancelledError, Future
from typing import Any

import numpy as np
import pytest
import torch

from reinforge.core import Experience, GenerationConfig
from reinforge.models.engines.hf import HFEngine
from reinforge.models.engines.mock import MockEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.models.wrapper.messages import validate_messages
from reinforge.models.wrapper.sampling_args import rollout_kwargs

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is 2 + 3?"},
]


@pytest.fixture
def mock_model() -> ModelWrapper:
    return ModelWrapper(MockEngine(policy="arithmetic"), enable_history=True)


@pytest.fixture
def tiny_model(tiny_model_and_tokenizer: tuple[Any, Any]) -> Iterator[ModelWrapper]:
    model, tokenizer = tiny_model_and_tokenizer
    engine = HFEngine(model=model, tokenizer=tokenizer, device="cpu")
    yield ModelWrapper(engine, enable_history=True, default_max_tokens=8)
    engine.close()


def check_experience(model: ModelWrapper, exp: Experience, prompt_ids: list[int]) -> None:
    """Token-exact fields: prompt ids first, then the sampled ids with one logprob each."""
    assert exp.tokens[: exp.prompt_length].tolist() == prompt_ids
    assert exp.prompt_length == len(prompt_ids)
    assert len(exp.logprobs) == exp.response_length == len(exp.tokens) - exp.prompt_length
    assert exp.logprobs.dtype == torch.float32
    assert exp.experience_type == "single_turn"
    decoded = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert decoded.startswith(exp.prompt_text)


# ---- mock engine ---------------------------------------------------------------------------


def test_chat_returns_n_experiences_with_messages(mock_model: ModelWrapper) -> None:
    exps = mock_model.chat(MESSAGES, n=3)
    assert len(exps) == 3
    _, prompt_ids = mock_model.chat_prompts.render(MESSAGES)
    for exp in exps:
        check_experience(mock_model, exp, prompt_ids)
        assert exp.response_text == "The answer is \\boxed{5}."
        assert exp.messages == [*MESSAGES, {"role": "assistant", "content": exp.response_text}]
        assert exp.truncate_status is None
        assert exp.info["finish_reason"] == "stop"
        assert exp.info["model_version"] == 0
        assert exp.prompt_text.endswith("<|im_start|>assistant\n")


def test_generate_raw_prompts_in_order(mock_model: ModelWrapper) -> None:
    exps = mock_model.generate(["1 + 1 =", "2 * 8 ="], n=2)
    assert [e.response_text for e in exps] == ["The answer is \\boxed{2}."] * 2 + [
        "The answer is \\boxed{16}."
    ] * 2
    assert exps[0].messages is None
    check_experience(mock_model, exps[2], mock_model.tokenizer.encode("2 * 8 ="))
    with pytest.raises(TypeError, match="list of prompts"):
        mock_model.generate("1 + 1")


def test_length_truncation_is_marked(mock_model: ModelWrapper) -> None:
    exp = mock_model.chat(MESSAGES, max_tokens=5)[0]
    assert exp.response_length == 5
    assert exp.truncate_status == "response_truncated"
    assert exp.info["finish_reason"] == "length"


def test_stop_strings_cut_response_text() -> None:
    model = ModelWrapper(MockEngine(replies=["abc STOP def"]))
    assert model.chat(MESSAGES, stop="STOP")[0].response_text == "abc "


def test_async_twins_match_sync(mock_model: ModelWrapper) -> None:
    sync = mock_model.chat(MESSAGES, n=2, seed=1)
    async_ = asyncio.run(mock_model.chat_async(MESSAGES, n=2, seed=1))
    assert [e.tokens.tolist() for e in sync] == [e.tokens.tolist() for e in async_]
    gen = asyncio.run(mock_model.generate_async(["3 - 1", "4 + 4"]))
    assert [e.response_text for e in gen] == [
        "The answer is \\boxed{2}.",
        "The answer is \\boxed{8}.",
    ]
    tokens = sync[0].tokens
    assert torch.equal(mock_model.logprobs(tokens), asyncio.run(mock_model.logprobs_async(tokens)))


def test_logprobs_agree_with_sampled_logprobs(mock_model: ModelWrapper) -> None:
    exp = mock_model.chat(MESSAGES)[0]
    scores = mock_model.logprobs(exp.tokens)
    assert len(scores) == len(exp.tokens) - 1
    assert torch.equal(scores[exp.prompt_length - 1 :], exp.logprobs)


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        ("hello", "non-empty list"),
        ([], "non-empty list"),
        ({"role": "user", "content": "x"}, "non-empty list"),
        (["hello"], r"messages\[0\] must be a dict"),
        ([{"role": "wizard", "content": "x"}], r"messages\[0\] has unknown role 'wizard'"),
        (
            [{"role": "user", "content": "x"}, {"content": "y"}],
            r"messages\[1\] has unknown role None",
        ),
        ([{"role": "user", "content": 3}], r"messages\[0\]\.content must be a string"),
    ],
)
def test_message_validation(mock_model: ModelWrapper, messages: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        mock_model.chat(messages)


def test_validate_messages_accepts_tool_and_none_content() -> None:
    msgs = [{"role": "assistant", "content": None}, {"role": "tool", "content": "42"}]
    assert validate_messages(msgs) == msgs


def test_unknown_sampling_kwarg_is_a_type_error(mock_model: ModelWrapper) -> None:
    with pytest.raises(TypeError, match="unknown sampling argument 'temprature'"):
        mock_model.chat(MESSAGES, temprature=0.5)
    # logprobs is accepted and ignored (always returned); None means "default"
    assert len(mock_model.chat(MESSAGES, logprobs=1, seed=None)) == 1


def test_rollout_kwargs_from_generation_config(mock_model: ModelWrapper) -> None:
    kwargs = rollout_kwargs(GenerationConfig(n=2, max_tokens=7, temperature=0.5))
    assert "logprobs" not in kwargs and "seed" not in kwargs
    exps = mock_model.chat(MESSAGES, **kwargs)
    assert len(exps) == 2
    assert all(e.response_length <= 7 for e in exps)


def test_history_is_recorded_and_cleared(mock_model: ModelWrapper) -> None:
    first = mock_model.chat(MESSAGES, n=2)
    second = mock_model.generate(["1 + 2"])
    history = mock_model.extract_experience_from_history(clear_history=False)
    assert history == [*first, *second]
    assert mock_model.extract_experience_from_history() == history
    assert mock_model.extract_experience_from_history() == []
    no_history = ModelWrapper(MockEngine())
    no_history.chat(MESSAGES)
    with pytest.raises(RuntimeError, match="enable_history"):
        no_history.extract_experience_from_history()


def test_model_version_follows_engine(mock_model: ModelWrapper) -> None:
    mock_model.engine.update_weights({}, version=3)
    assert mock_model.model_version == 3
    assert mock_model.chat(MESSAGES)[0].info["model_version"] == 3


# ---- tiny HF model -----------------------------------------------------------------------


def test_tiny_model_chat_experiences(tiny_model: ModelWrapper) -> None:
    exps = tiny_model.chat(MESSAGES, n=2, seed=0, max_tokens=6)
    _, prompt_ids = tiny_model.chat_prompts.render(MESSAGES)
    assert len(exps) == 2
    for exp in exps:
        check_experience(tiny_model, exp, prompt_ids)
        assert exp.response_length == 6
        assert exp.truncate_status == "response_truncated"
        assert exp.response_text == tiny_model.tokenizer.decode(
            exp.tokens[exp.prompt_length :].tolist()
        )
        # sampled log-probabilities are those the model assigns on a fresh pass
        assert torch.allclose(
            tiny_model.logprobs(exp.tokens)[exp.prompt_length - 1 :], exp.logprobs, atol=1e-4
        )
    assert "<|im_start|>user" in exps[0].prompt_text


def test_tiny_model_generate_and_async(tiny_model: ModelWrapper) -> None:
    exps = tiny_model.generate(["Once upon a time", "The answer is"], seed=1)
    assert [e.prompt_text for e in exps] == ["Once upon a time", "The answer is"]
    assert all(e.response_length == 8 for e in exps)
    again = asyncio.run(tiny_model.generate_async(["Once upon a time", "The answer is"], seed=1))
    assert [e.tokens.tolist() for e in again] == [e.tokens.tolist() for e in exps]
    chat = asyncio.run(tiny_model.chat_async(MESSAGES, seed=2))
    assert chat[0].messages[-1]["role"] == "assistant"
    lp = asyncio.run(tiny_model.logprobs_async(exps[0].tokens))
    assert lp.shape == (len(exps[0].tokens) - 1,)
    assert len(tiny_model.extract_experience_from_history()) == 5


# ---- cancelling engine requests (issue: trust the run, 2) -----------------------------------


class HeldEngine(MockEngine):
    """A mock engine whose requests stay in flight until the test resolves them (a long
    generation); it keeps every future it handed out."""

    def __init__(self) -> None:
        super().__init__(policy="arithmetic")
        self.futures: list[Future] = []

    def submit(self, prompt_ids: list[int], params: Any) -> Future:
        self.futures.append(Future())
        return self.futures[-1]

    def submit_score(self, token_ids: list[int]) -> Future:
        self.futures.append(Future())
        return self.futures[-1]


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_cancel_pending_cancels_generation_and_scoring_requests() -> None:
    engine = HeldEngine()
    model = ModelWrapper(engine)
    errors: list[BaseException] = []

    def call(fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except BaseException as exc:
            errors.append(exc)

    threads = [
        threading.Thread(target=call, args=(model.chat, MESSAGES), daemon=True),
        threading.Thread(target=call, args=(model.logprobs, [1, 2, 3]), daemon=True),
    ]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(engine.futures) == 2)
    cancelled = model.cancel_pending()
    for fut in engine.futures:  # what was not cancelled is released, so no thread stays blocked
        if not fut.done():
            fut.set_result([])
    for thread in threads:
        thread.join(5)
    assert cancelled == 2
    assert all(fut.cancelled() for fut in engine.futures)
    assert [type(e) for e in errors] == [CancelledError, CancelledError]  # callers are freed


def test_a_closed_wrapper_refuses_new_requests_with_a_clear_error() -> None:
    model = ModelWrapper(MockEngine(policy="arithmetic"))
    assert model.chat(MESSAGES)[0].response_text
    model.close()
    for call in (
        lambda: model.chat(MESSAGES),
        lambda: model.generate(["1 + 1 ="]),
        lambda: model.logprobs([1, 2, 3]),
        lambda: asyncio.run(model.logprobs_async([1, 2, 3])),
    ):
        with pytest.raises(RuntimeError, match="closed"):
            call()


def test_finished_requests_are_not_kept() -> None:
    engine = HeldEngine()
    model = ModelWrapper(engine)
    thread = threading.Thread(target=model.logprobs, args=([1, 2, 3],), daemon=True)
    thread.start()
    wait_for(lambda: len(engine.futures) == 1)
    engine.futures[0].set_result([-0.5, -0.5])
    thread.join(5)
    assert model.cancel_pending() == 0  # nothing left to cancel: the finished one was dropped


def test_the_turn_index_shares_the_tokens_without_a_tensor_for_the_gc_to_walk(
    mock_model: ModelWrapper,
) -> None:
    exp = mock_model.chat([{"role": "user", "content": "What is 2 + 3?"}])[0]
    turn = mock_model.chat_prompts.turns._recent[-1]
    assert not gc.is_tracked(turn.tokens)  # a tensor would be, for the turn's lifetime
    assert np.shares_memory(turn.tokens, exp.tokens.numpy())
    assert turn.tokens.tolist() == exp.tokens.tolist()
