"""MockEngine: reply rules, the arithmetic policy, fake log-probabilities, budgets."""

from __future__ import annotations

import asyncio

import pytest

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.mock import MockEngine, fake_logprob
from reinforge.models.tokenizer import ByteTokenizer

TOK = ByteTokenizer()


def reply_texts(engine: MockEngine, prompt: str, **params: object) -> list[str]:
    comps = engine.generate(TOK.encode(prompt), SamplingParams(**params))
    return [TOK.decode(c.token_ids) for c in comps]


def test_dict_rules_first_match_with_group_references() -> None:
    engine = MockEngine(
        replies={r"capital of (\w+)": r"I think \1.", r"capital": "never used", "hi": "hello"}
    )
    assert reply_texts(engine, "What is the capital of France?") == ["I think France."]
    assert reply_texts(engine, "oh hi") == ["hello"]
    assert reply_texts(engine, "zzz") == ["I do not know."]


def test_list_rules_cycle_by_sample_index() -> None:
    engine = MockEngine(replies=["a", "b"])
    assert reply_texts(engine, "x", n=3) == ["a", "b", "a"]


def test_callable_rules_get_prompt_text_and_index() -> None:
    engine = MockEngine(replies=lambda text, i: f"{len(text)}-{i}")
    assert reply_texts(engine, "abcd", n=2) == ["4-0", "4-1"]


def test_default_reply_and_unknown_policy() -> None:
    assert reply_texts(MockEngine(default_reply="pass"), "x") == ["pass"]
    with pytest.raises(ValueError, match="unknown mock policy 'smart'"):
        MockEngine(policy="smart")


def test_echo_policy() -> None:
    assert reply_texts(MockEngine(policy="echo"), "repeat me") == ["repeat me"]


@pytest.mark.parametrize(
    ("prompt", "answer"),
    [("What is 3 + 4?", "7"), ("Compute 6 * 7", "42"), ("1 + 1 then 10 - 3", "7")],
)
def test_arithmetic_policy_answers_last_expression(prompt: str, answer: str) -> None:
    assert reply_texts(MockEngine(policy="arithmetic"), prompt) == [
        f"The answer is \\boxed{{{answer}}}."
    ]


def test_arithmetic_error_rate_is_deterministic_per_seed() -> None:
    prompt = "What is 20 + 22?"
    noisy = MockEngine(policy="arithmetic", error_rate=0.5, seed=1)
    first = reply_texts(noisy, prompt, n=16)
    assert first == reply_texts(noisy, prompt, n=16)  # same prompt and seed: same samples
    assert "The answer is \\boxed{42}." in first
    assert {"The answer is \\boxed{41}.", "The answer is \\boxed{43}."} & set(first)
    assert first != reply_texts(
        MockEngine(policy="arithmetic", error_rate=0.5, seed=2), prompt, n=16
    )
    assert first != reply_texts(noisy, prompt, n=16, seed=5)  # a request seed overrides
    always_wrong = reply_texts(MockEngine(policy="arithmetic", error_rate=1.0), prompt, n=8)
    assert "The answer is \\boxed{42}." not in always_wrong


def test_completion_ends_with_eos_and_stop_strings_cut() -> None:
    engine = MockEngine(replies=["first line\nsecond line"])
    comp = engine.generate(TOK.encode("q"), SamplingParams())[0]
    assert comp.finish_reason == "stop"
    assert comp.token_ids[-1] == TOK.eos_token_ids[0]
    cut = engine.generate(TOK.encode("q"), SamplingParams(stop=["\n"]))[0]
    assert TOK.decode(cut.token_ids) == "first line"


def test_max_tokens_and_max_model_len_truncate() -> None:
    engine = MockEngine(replies=["0123456789"], max_model_len=20)
    comp = engine.generate(TOK.encode("q"), SamplingParams(max_tokens=4))[0]
    assert (comp.finish_reason, TOK.decode(comp.token_ids)) == ("length", "0123")
    comp = engine.generate(TOK.encode("x" * 17), SamplingParams(max_tokens=100))[0]
    assert (comp.finish_reason, len(comp.token_ids)) == ("length", 3)


def test_fake_logprobs_agree_with_submit_score() -> None:
    engine = MockEngine(replies=["some reply"])
    prompt = TOK.encode("<|im_start|>user\nhi<|im_end|>\n")
    comp = engine.generate(prompt, SamplingParams())[0]
    assert all(lp < 0 for lp in comp.logprobs)
    assert comp.logprobs == [fake_logprob(t, len(prompt) + j) for j, t in enumerate(comp.token_ids)]
    scores = engine.score(prompt + comp.token_ids)
    assert len(scores) == len(prompt) + len(comp.token_ids) - 1
    assert scores[len(prompt) - 1 :] == comp.logprobs


def test_async_and_weight_updates() -> None:
    engine = MockEngine(replies=["ok"])
    comps = asyncio.run(engine.generate_async(TOK.encode("q"), SamplingParams(n=2)))
    assert len(comps) == 2
    assert asyncio.run(engine.score_async([5, 6, 7])) == [fake_logprob(6, 1), fake_logprob(7, 2)]
    engine.update_weights({})
    assert engine.model_version == 1
    engine.update_weights({}, version=5)
    assert engine.model_version == 5
    assert engine.requests == 1


@pytest.mark.parametrize("bad", [[500], [-1], [5, "a"], [5, True], [5, 2.0]])
def test_ids_outside_the_vocabulary_fail_the_future_like_the_hf_engine(bad: list) -> None:
    engine = MockEngine(replies=["ok"])
    with pytest.raises(ValueError, match=r"outside the vocabulary.*0\.\.258"):
        engine.submit(bad, SamplingParams()).result()
    with pytest.raises(ValueError, match="outside the vocabulary"):
        engine.submit_score(bad).result()
    assert engine.generate(TOK.encode("q"), SamplingParams())[0].finish_reason == "stop"
