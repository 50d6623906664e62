"""Prefix reuse in the hf engine: a continued conversation skips the prefill of what it
already computed, and samples exactly what a full prefill would."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from reinforge.models.engines.hf import HFEngine
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.models.prefix_cache import PrefixCache


def states(n: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    return [(torch.zeros(1, n, 2), torch.zeros(1, n, 2))]


def test_longest_stored_prefix_wins_and_lru_evicts_by_tokens():
    cache = PrefixCache(max_tokens=50, min_tokens=2)
    cache.put((1, 2, 3), states(3))
    cache.put((1, 2, 3, 4, 5), states(5))
    assert cache.longest_prefix([1, 2, 3, 4, 5, 6])[0] == 5
    assert cache.longest_prefix([1, 2, 3, 9])[0] == 3
    assert cache.longest_prefix([1, 2, 3]) is None  # a whole prompt is never reused
    assert cache.longest_prefix([7, 8, 9]) is None
    cache.put(tuple(range(100, 145)), states(45))  # over budget: least recently used go
    assert cache.tokens == 48  # (1..5) was used before (1, 2, 3): it went
    assert cache.longest_prefix([1, 2, 3, 4, 5, 6])[0] == 3
    cache.put((5,), states(1))  # too short to keep
    assert len(cache) == 2
    cache.clear()
    assert len(cache) == 0 and cache.tokens == 0


def conversation(wrapper: ModelWrapper, turns: int) -> list[Any]:
    messages = [{"role": "user", "content": "Count with me: one, two"}]
    replies = []
    for turn in range(turns):
        exp = wrapper.chat(messages, temperature=0.0, max_tokens=8)[0]
        replies.append(exp)
        messages += [
            {"role": "assistant", "content": exp.response_text},
            {"role": "user", "content": f"Go on ({turn})."},
        ]
    return replies


@pytest.fixture
def engines(tiny_model_and_tokenizer):
    model, tokenizer = tiny_model_and_tokenizer
    plain = HFEngine(model=model, tokenizer=tokenizer, device="cpu")
    reusing = HFEngine(model=model, tokenizer=tokenizer, device="cpu", prefix_cache_tokens=4096)
    yield plain, reusing
    plain.close()
    reusing.close()


def test_continued_conversation_reuses_its_prefix_and_samples_the_same(engines):
    plain, reusing = engines
    expected = conversation(ModelWrapper(plain), 4)
    got = conversation(ModelWrapper(reusing), 4)
    assert reusing.stats["prefix_hits"] == 3  # every turn after the first
    assert reusing.stats["prefix_reused_tokens"] > 0
    assert plain.stats["prefix_hits"] == 0
    for a, b in zip(expected, got, strict=True):
        assert a.tokens.tolist() == b.tokens.tolist()
        torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-4, rtol=0)


def test_samples_of_a_group_each_seed_the_cache(engines):
    _, reusing = engines
    wrapper = ModelWrapper(reusing)
    first = wrapper.chat(
        [{"role": "user", "content": "Say something long enough"}], n=3, max_tokens=6
    )
    assert len(reusing._prefix) >= 1
    follow = [
        {"role": "user", "content": "Say something long enough"},
        {"role": "assistant", "content": first[1].response_text},
        {"role": "user", "content": "And then?"},
    ]
    wrapper.chat(follow, max_tokens=4)
    assert reusing.stats["prefix_hits"] == 1


def test_weight_update_forgets_stored_states(engines, tiny_model_and_tokenizer):
    _, reusing = engines
    conversation(ModelWrapper(reusing), 2)
    assert len(reusing._prefix) > 0
    model, _ = tiny_model_and_tokenizer
    reusing.update_weights(copy.deepcopy(model.state_dict()))
    assert len(reusing._prefix) == 0


def test_concurrent_conversations_of_different_lengths_share_one_reuse_prefill(engines):
    """Continuations with different stored and new lengths are prefilled together
    (masked gaps between stored and new positions) and still sample exactly the same."""
    from concurrent.futures import ThreadPoolExecutor

    plain, reusing = engines

    def talk(engine: HFEngine, opener: str) -> list[Any]:
        wrapper = ModelWrapper(engine)
        messages = [{"role": "user", "content": opener}]
        out = []
        for turn in range(3):
            exp = wrapper.chat(messages, temperature=0.0, max_tokens=5 + 3 * turn)[0]
            out.append(exp)
            messages += [
                {"role": "assistant", "content": exp.response_text},
                {"role": "user", "content": "More" + "!" * turn},
            ]
        return out

    openers = ["Short one", "A much longer opening message that takes more tokens", "Mid size"]
    with ThreadPoolExecutor(3) as pool:
        expected = list(pool.map(lambda o: talk(plain, o), openers))
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda o: talk(reusing, o), openers))
    assert reusing.stats["prefix_hits"] == 6
    for chat_a, chat_b in zip(expected, got, strict=True):
        for a, b in zip(chat_a, chat_b, strict=True):
            assert a.tokens.tolist() == b.tokens.tolist()
            torch.testing.assert_close(a.logprobs, b.logprobs, atol=1e-4, rtol=0)
