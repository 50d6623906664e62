"""The hf engine's KV cache: slab buffers keep no more spare columns than the running
batch's rows can still write, and the values stay exact when a buffer must grow."""

from __future__ import annotations

from typing import Any

import torch

from reinforge.models.engine import SamplingParams
from reinforge.models.engines.hf import HFEngine
from reinforge.models.engines.hf.kv_cache import MIN_HEADROOM, new_cache, reserve


def prompt_of(length: int, offset: int = 0) -> list[int]:
    return [100 + (offset * 7919 + 31 * i) % 20000 for i in range(length)]


def slab(config: Any, spare: int | None = None) -> Any:
    cache = new_cache(config, spare=spare)
    layer = cache.layers[0]
    assert hasattr(layer, "set_states"), "the tiny model's layers should be slab layers"
    return cache, layer


def kv(length: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(3, 2, length, 4, generator=gen), torch.randn(3, 2, length, 4, generator=gen)


def test_spare_columns_follow_what_the_rows_can_still_write(
    tiny_model_and_tokenizer: tuple[Any, Any],
) -> None:
    config = tiny_model_and_tokenizer[0].config
    _, unknown = slab(config)
    unknown.set_states(*kv(10))
    assert unknown._kbuf.shape[-2] == 10 + MIN_HEADROOM  # nothing said: the old headroom
    _, known = slab(config, spare=5)
    known.set_states(*kv(10))
    assert known._kbuf.shape[-2] == 10 + 5
    cache, long = slab(config, spare=10_000)
    long.set_states(*kv(200))
    assert long._kbuf.shape[-2] == 200 + 100  # growth stays amortised, never more than before
    reserve(cache, 3)
    long.batch_select_indices(torch.tensor([2, 0]))
    assert long._kbuf.shape == (2, 2, 203, 4)


def test_a_buffer_that_fills_up_grows_and_keeps_every_value(
    tiny_model_and_tokenizer: tuple[Any, Any],
) -> None:
    _, layer = slab(tiny_model_and_tokenizer[0].config, spare=2)
    keys, values = kv(6)
    layer.update(keys, values)
    for step in range(5):  # more than the 2 columns reserved: the buffer is rebuilt
        k, v = kv(1, seed=step + 1)
        keys, values = torch.cat([keys, k], dim=2), torch.cat([values, v], dim=2)
        out_k, out_v = layer.update(k, v)
        assert torch.equal(out_k, keys) and torch.equal(out_v, values)


def test_the_running_batch_keeps_the_spare_columns_its_rows_need_and_no_more(
    engine: HFEngine,
) -> None:
    """Ragged prompts, rows joining a running batch and leaving it at different
    lengths: before every decode step each slab buffer has room for every row's
    remaining tokens (no rebuild per step) and at most one column more."""
    seen: list[tuple[int, int]] = []
    step = engine._decode_step

    def checked_step() -> None:
        need = engine._spare_columns(engine._rows)
        for layer in engine._cache.layers:
            seen.append((layer._kbuf.shape[-2] - layer._end, need))
        step()

    engine._decode_step = checked_step  # type: ignore[method-assign]
    first = engine.submit(prompt_of(7, 1), SamplingParams(n=2, max_tokens=12, seed=1))
    wait = [
        engine.submit(prompt_of(19, 2), SamplingParams(n=3, max_tokens=5, seed=2)),
        engine.submit(prompt_of(4, 3), SamplingParams(max_tokens=9, seed=3)),
    ]
    results = [first.result(timeout=60), *(f.result(timeout=60) for f in wait)]
    assert [len(c.token_ids) for r in results for c in r] == [12, 12, 5, 5, 5, 9]
    assert seen
    for spare, need in seen:
        assert need <= spare <= need + 1, (spare, need)
