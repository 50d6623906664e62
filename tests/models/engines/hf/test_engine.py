"""HFEngine: exact log-probabilities, seeding, stopping, continuous batching, lifecycle.

Fast tests run the 2-layer random model; ``slow`` ones run the real SmolLM2-135M
for properties a random model cannot show (it never says eos on its own).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine, load_causal_lm


def fresh_logprobs(model: Any, prompt: list[int], response: list[int]) -> list[float]:
    """log p(response[i] | prompt + response[:i]) from one unbatched, unpadded forward pass."""
    ids = torch.tensor([prompt + response])
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
    return logp.gather(-1, torch.tensor(response)[:, None])[:, 0].tolist()


def assert_exact(model: Any, prompt: list[int], completion: Any) -> None:
    expected = torch.tensor(fresh_logprobs(model, prompt, completion.token_ids))
    assert len(completion.logprobs) == len(completion.token_ids)
    assert torch.allclose(torch.tensor(completion.logprobs), expected, atol=1e-4)


def prompt_of(length: int, offset: int = 0) -> list[int]:
    """A deterministic prompt of ordinary (non-special) token ids."""
    return [100 + (offset * 7919 + 31 * i) % 20000 for i in range(length)]


@pytest.fixture
def own_engine(tiny_model_path: Path) -> Iterator[HFEngine]:
    """An engine with its own copy of the weights, for tests that change them."""
    eng = HFEngine(tiny_model_path, device="cpu")
    yield eng
    eng.close()


class EosAfter:
    """Wraps a model so that eos becomes (nearly) certain from a given position on.

    The random model practically never samples eos by itself; this lets fast tests
    see rows stop on eos at different steps of one batch.
    """

    def __init__(self, model: Any, eos_id: int, position: int) -> None:
        self.model, self.eos_id, self.position = model, eos_id, position
        self.config = model.config
        self.generation_config = model.generation_config

    def __call__(self, **kwargs: Any) -> Any:
        out = self.model(**kwargs)
        pos = kwargs["position_ids"][:, -1]
        out.logits[:, -1, self.eos_id] += torch.where(pos >= self.position - 1, 1e4, 0.0)
        return out

    def load_state_dict(self, *args: Any, **kwargs: Any) -> Any:
        return self.model.load_state_dict(*args, **kwargs)


# ---- exactness and seeding ---------------------------------------------------------------


def test_logprobs_match_fresh_forward_for_concurrent_ragged_requests(
    tiny_model_and_tokenizer: tuple[Any, Any],
) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    prompts = [prompt_of(5, 1), prompt_of(17, 2), prompt_of(30, 3)]
    budgets = [9, 23, 14]
    # a wide collection window, so that a busy machine cannot split the prefill
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", batch_window_ms=500) as engine:
        futures = [
            engine.submit(p, SamplingParams(n=3, max_tokens=m, seed=i, temperature=0.9))
            for i, (p, m) in enumerate(zip(prompts, budgets, strict=True))
        ]
        results = [f.result(timeout=60) for f in futures]
        assert engine.stats["prefills"] == 1  # prefilled together, then fanned out
        assert engine.stats["max_rows"] == 9
    for prompt, budget, comps in zip(prompts, budgets, results, strict=True):
        assert len(comps) == 3
        assert len({tuple(c.token_ids) for c in comps}) == 3  # n samples differ
        for comp in comps:
            assert len(comp.token_ids) == budget
            assert comp.finish_reason == "length"
            assert_exact(model, prompt, comp)


def test_identical_prompts_of_separate_requests_are_prefilled_once(
    tiny_model_and_tokenizer: tuple[Any, Any],
) -> None:
    """The rollouts of one task arrive as separate requests with the same prompt: one
    prefilled row serves them all, and each request keeps its own samples, exact
    log-probs and seeded stream (the same as when sampled alone)."""
    model, tokenizer = tiny_model_and_tokenizer
    shared, other = prompt_of(20, 1), prompt_of(9, 2)
    prompts = [shared, other, shared, shared]
    params = [SamplingParams(n=2 if i == 3 else 1, max_tokens=8, seed=i) for i in range(4)]
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", batch_window_ms=500) as engine:
        futures = [engine.submit(p, sp) for p, sp in zip(prompts, params, strict=True)]
        results = [f.result(timeout=60) for f in futures]
        assert engine.stats["prefills"] == 1
        assert engine.stats["shared_prefills"] == 2  # the 2nd and 3rd copies of `shared`
        assert engine.stats["max_rows"] == 5
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu") as alone:
        expected = [alone.submit(p, sp).result(timeout=60) for p, sp in zip(prompts, params, strict=True)]  # fmt: skip
    for prompt, comps, alone_comps in zip(prompts, results, expected, strict=True):
        assert [c.token_ids for c in comps] == [c.token_ids for c in alone_comps]
        for comp in comps:
            assert_exact(model, prompt, comp)
    assert results[0][0].token_ids != results[2][0].token_ids  # seeds 0 and 2 differ


def test_logprobs_are_raw_model_even_with_top_k_top_p(engine: HFEngine) -> None:
    prompt = prompt_of(12, 4)
    params = SamplingParams(n=2, max_tokens=10, seed=5, temperature=0.5, top_k=20, top_p=0.8)
    for comp in engine.generate(prompt, params):
        assert_exact(engine.model, prompt, comp)


def test_same_seed_same_tokens_different_seed_differs(engine: HFEngine) -> None:
    prompt = prompt_of(10, 5)
    a = engine.generate(prompt, SamplingParams(n=2, max_tokens=12, seed=7))
    b = engine.generate(prompt, SamplingParams(n=2, max_tokens=12, seed=7))
    c = engine.generate(prompt, SamplingParams(n=2, max_tokens=12, seed=8))
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    assert [x.logprobs for x in a] == [x.logprobs for x in b]
    assert [x.token_ids for x in a] != [x.token_ids for x in c]


def test_greedy_equals_hf_generate(engine: HFEngine) -> None:
    prompt = prompt_of(11, 6)
    comp = engine.generate(prompt, SamplingParams(temperature=0.0, max_tokens=16))[0]
    with torch.inference_mode():
        out = engine.model.generate(
            input_ids=torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            do_sample=False,
            max_new_tokens=16,
            eos_token_id=engine.tokenizer.eos_token_ids,
            pad_token_id=engine.tokenizer.pad_token_id,
        )
    assert comp.token_ids == out[0, len(prompt) :].tolist()


def test_logits_row_padding_stays_on_the_engine_thread(
    tiny_model_and_tokenizer: tuple[Any, Any],
) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    head = model.get_output_embeddings()
    eng = HFEngine(model=model, tokenizer=tokenizer, device="cpu", batch_window_ms=200)
    assert len(head._forward_pre_hooks) == 1
    # 7 rows: the projection runs on 16 padded rows, the rows keep their own logits
    futures = [
        eng.submit(prompt_of(4 + i, i), SamplingParams(max_tokens=5, seed=i)) for i in range(7)
    ]
    for i, fut in enumerate(futures):
        assert_exact(model, prompt_of(4 + i, i), fut.result(timeout=60)[0])
    # another thread calling the shared model sees plain shapes
    with torch.inference_mode():
        out = model(input_ids=torch.tensor([prompt_of(3)] * 7), logits_to_keep=1)
    assert out.logits.shape[0] == 7
    eng.close()
    assert not head._forward_pre_hooks and not head._forward_hooks


def test_score_matches_fresh_forward(engine: HFEngine) -> None:
    ids = prompt_of(20, 7)
    expected = fresh_logprobs(engine.model, ids[:1], ids[1:])
    assert torch.allclose(torch.tensor(engine.score(ids)), torch.tensor(expected), atol=1e-5)


# ---- stopping ---------------------------------------------------------------------------


def test_eos_stops_rows_at_different_steps(tiny_model_and_tokenizer: tuple[Any, Any]) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    eos = tokenizer.eos_token_id
    with HFEngine(
        model=EosAfter(model, eos, position=24), tokenizer=tokenizer, device="cpu"
    ) as eng:
        futures = [
            eng.submit(prompt_of(n, n), SamplingParams(n=2, max_tokens=50, seed=n))
            for n in (6, 15, 20)
        ]
        results = [f.result(timeout=60) for f in futures]
    for n, comps in zip((6, 15, 20), results, strict=True):
        for comp in comps:
            assert comp.finish_reason == "stop"
            assert comp.token_ids[-1] == eos
            assert eos not in comp.token_ids[:-1]
            assert len(comp.token_ids) == 24 - n + 1


def test_max_tokens_gives_length(engine: HFEngine) -> None:
    comp = engine.generate(prompt_of(8), SamplingParams(max_tokens=5, seed=1))[0]
    assert comp.finish_reason == "length"
    assert len(comp.token_ids) == 5


def test_max_model_len_caps_the_response(tiny_model_and_tokenizer: tuple[Any, Any]) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", max_model_len=20) as eng:
        comp = eng.generate(prompt_of(15), SamplingParams(max_tokens=100, seed=1))[0]
    assert comp.finish_reason == "length"
    assert len(comp.token_ids) == 5


def test_stop_token_ids(engine: HFEngine) -> None:
    prompt = prompt_of(9, 8)
    free = engine.generate(prompt, SamplingParams(max_tokens=20, seed=3))[0]
    target = free.token_ids[6]
    stopped = engine.generate(
        prompt, SamplingParams(max_tokens=20, seed=3, stop_token_ids=[target])
    )[0]
    assert stopped.finish_reason == "stop"
    assert stopped.token_ids[-1] == target
    assert stopped.token_ids == free.token_ids[: len(stopped.token_ids)]


def test_stop_strings(engine: HFEngine) -> None:
    prompt = prompt_of(9, 9)
    free = engine.generate(prompt, SamplingParams(max_tokens=30, seed=11))[0]
    decode = engine.tokenizer.decode
    # a piece of text that first shows up somewhere after the 5th token
    piece = next(
        text
        for i in range(5, 30)
        if len(text := decode(free.token_ids[i : i + 1]).strip()) >= 2
        and text not in decode(free.token_ids[:i])
    )
    stopped = engine.generate(prompt, SamplingParams(max_tokens=30, seed=11, stop=[piece]))[0]
    assert stopped.finish_reason == "stop"
    assert stopped.token_ids == free.token_ids[: len(stopped.token_ids)]
    assert piece in decode(stopped.token_ids)
    assert piece not in decode(stopped.token_ids[:-1])


# ---- continuous batching -----------------------------------------------------------------


def wait_for(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.002)


def test_request_joins_a_running_batch(engine: HFEngine) -> None:
    model = engine.model
    long_prompt, short_prompt = prompt_of(7, 10), prompt_of(25, 11)
    long = engine.submit(long_prompt, SamplingParams(n=2, max_tokens=300, seed=1))
    wait_for(lambda: engine.stats["decode_steps"] >= 3)
    short = engine.submit(short_prompt, SamplingParams(n=2, max_tokens=8, seed=2))
    short_comps = short.result(timeout=60)
    assert not long.done()  # the short request did not wait for the long one
    long_comps = long.result(timeout=60)
    assert engine.stats["joins"] >= 1
    assert engine.stats["max_rows"] == 4
    for comp in short_comps:
        assert_exact(model, short_prompt, comp)
    for comp in long_comps:
        assert len(comp.token_ids) == 300
        assert_exact(model, long_prompt, comp)


def test_staggered_submissions_from_threads(engine: HFEngine) -> None:
    model = engine.model
    results: dict[int, Any] = {}

    def worker(i: int) -> None:
        time.sleep(0.01 * i)
        prompt = prompt_of(4 + 5 * i, 20 + i)
        comps = engine.generate(prompt, SamplingParams(n=1 + i % 2, max_tokens=6 + 4 * i, seed=i))
        results[i] = (prompt, comps)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == list(range(6))
    for i, (prompt, comps) in results.items():
        assert len(comps) == 1 + i % 2
        for comp in comps:
            assert len(comp.token_ids) == 6 + 4 * i
            assert_exact(model, prompt, comp)


def test_prompt_longer_than_max_model_len(tiny_model_and_tokenizer: tuple[Any, Any]) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", max_model_len=32) as eng:
        fut = eng.submit(prompt_of(40), SamplingParams())
        with pytest.raises(ValueError, match=r"40 tokens.*max_model_len is 32"):
            fut.result(timeout=5)
        with pytest.raises(ValueError, match="empty prompt"):
            eng.submit([], SamplingParams()).result(timeout=5)
        # the engine keeps serving after rejecting a request
        assert len(eng.generate(prompt_of(5), SamplingParams(max_tokens=3))[0].token_ids) == 3


# ---- weights and lifecycle ---------------------------------------------------------------


def test_update_weights_changes_outputs_and_version(own_engine: HFEngine) -> None:
    prompt = prompt_of(10, 12)
    greedy = SamplingParams(temperature=0.0, max_tokens=12)
    before = own_engine.generate(prompt, greedy)[0].token_ids
    old_model = copy.deepcopy(own_engine.model)
    assert own_engine.model_version == 0

    # an in-flight request finishes on the old weights before the update lands
    running = own_engine.submit(prompt, SamplingParams(max_tokens=200, seed=3))
    wait_for(lambda: own_engine.stats["decode_steps"] >= 2 + 12)
    torch.manual_seed(0)
    # lm_head is tied to the embeddings: send one of the two keys only
    state = {
        k: v + 0.5 * torch.randn_like(v)
        for k, v in own_engine.model.state_dict().items()
        if k != "lm_head.weight"
    }
    own_engine.update_weights(state)
    assert running.done()
    assert_exact(old_model, prompt, running.result()[0])

    assert own_engine.model_version == 1
    after = own_engine.generate(prompt, greedy)[0]
    assert after.token_ids != before
    assert_exact(own_engine.model, prompt, after)
    own_engine.update_weights({}, version=7)
    assert own_engine.model_version == 7
    # names from another model (e.g. a PEFT wrapper's prefixes) fail loudly
    weight = own_engine.model.state_dict()["model.norm.weight"]
    with pytest.raises(ValueError, match="names the model does not have"):
        own_engine.update_weights({"base_model.model.model.norm.weight": weight})
    assert own_engine.model_version == 7


def test_close_fails_pending_futures(tiny_model_and_tokenizer: tuple[Any, Any]) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    eng = HFEngine(model=model, tokenizer=tokenizer, device="cpu", max_batch_size=2)
    running = eng.submit(prompt_of(6), SamplingParams(n=2, max_tokens=1000, seed=1))
    wait_for(lambda: eng.stats["decode_steps"] >= 1)
    queued = [eng.submit(prompt_of(6, i), SamplingParams(max_tokens=1000)) for i in range(3)]
    start = time.monotonic()
    eng.close()
    assert time.monotonic() - start < 10
    for fut in [running, *queued]:
        with pytest.raises(RuntimeError, match="closed"):
            fut.result(timeout=5)
    with pytest.raises(RuntimeError, match="closed"):
        eng.submit(prompt_of(6), SamplingParams()).result(timeout=5)
    with pytest.raises(RuntimeError, match="closed"):
        eng.update_weights({})
    eng.close()  # idempotent


def test_cancelled_request_is_skipped(tiny_model_and_tokenizer: tuple[Any, Any]) -> None:
    model, tokenizer = tiny_model_and_tokenizer
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", max_batch_size=1) as eng:
        first = eng.submit(prompt_of(6), SamplingParams(max_tokens=40, seed=1))
        second = eng.submit(prompt_of(6, 1), SamplingParams(max_tokens=40, seed=2))
        third = eng.submit(prompt_of(6, 2), SamplingParams(max_tokens=4, seed=3))
        assert second.cancel()
        assert len(first.result(timeout=30)[0].token_ids) == 40
        assert len(third.result(timeout=30)[0].token_ids) == 4


# ---- the real model ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_engine(real_model_path: Path) -> Iterator[HFEngine]:
    model, tokenizer = load_causal_lm(real_model_path, "cpu", torch.float32)
    eng = HFEngine(model=model, tokenizer=tokenizer, device="cpu")
    yield eng
    eng.close()


def chat_ids(eng: HFEngine, question: str) -> list[int]:
    return eng.tokenizer.encode(eng.tokenizer.render_chat([{"role": "user", "content": question}]))


@pytest.mark.slow
def test_real_model_stops_on_eos_with_exact_logprobs(real_engine: HFEngine) -> None:
    prompts = [chat_ids(real_engine, q) for q in ("What is 2 + 2?", "Say hello.")]
    futures = [
        real_engine.submit(p, SamplingParams(n=4, max_tokens=48, seed=i, temperature=0.7))
        for i, p in enumerate(prompts)
    ]
    eos = real_engine.tokenizer.eos_token_ids
    stopped = 0
    for prompt, fut in zip(prompts, futures, strict=True):
        for comp in fut.result(timeout=120):
            assert_exact(real_engine.model, prompt, comp)
            if comp.finish_reason == "stop":
                stopped += 1
                assert comp.token_ids[-1] in eos
    assert stopped >= 4  # short questions: the model answers and says <|im_end|>


@pytest.mark.slow
def test_real_model_greedy_equals_hf_generate(real_engine: HFEngine) -> None:
    prompt = chat_ids(real_engine, "Name a primary color.")
    comp = real_engine.generate(prompt, SamplingParams(temperature=0.0, max_tokens=24))[0]
    with torch.inference_mode():
        out = real_engine.model.generate(
            input_ids=torch.tensor([prompt]),
            attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
            do_sample=False,
            max_new_tokens=24,
            eos_token_id=real_engine.tokenizer.eos_token_ids,
            pad_token_id=real_engine.tokenizer.pad_token_id,
        )
    assert comp.token_ids == out[0, len(prompt) :].tolist()
