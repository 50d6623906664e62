"""The streamed sync from trainer ranks (DDP and FSDP2 on gloo): rank 0 sends each bucket
as its own message, the buckets stay under their bound and together equal the whole
gathered state dict (full and LoRA merged); a stream the engine leaves half-read is
drained, so the ranks stay usable; a LoRA adapter saved from FSDP2 shards is the one
a single process saves."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from reinforge.trainer.parallel.ranked_trainer import RankedTrainer
from reinforge.trainer.trainer import Trainer
from reinforge.trainer.trainer_config import TrainerConfig
from reinforge.trainer.weight_stream import tensor_bytes

BOUND = 64 * 1024


def config(strategy: str | None, lora: bool) -> TrainerConfig:
    data: dict[str, Any] = {"lr": 1e-3, "lora": {"enabled": lora, "r": 4, "alpha": 8}}
    if strategy is not None:
        data["parallel"] = {"world_size": 2, "strategy": strategy, "timeout_s": 300}
    return TrainerConfig.model_validate(data)


def _union(buckets: list[dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for bucket in buckets:
        assert not out.keys() & bucket.keys()
        out.update(bucket)
    return out


@pytest.mark.parametrize(("strategy", "lora"), [("ddp", False), ("fsdp2", False), ("fsdp2", True)])
def test_ranks_stream_what_they_gather_whole(
    strategy: str, lora: bool, tiny_model_path: Path, tmp_path: Path
) -> None:
    with RankedTrainer(tiny_model_path, config(strategy, lora), pad_token_id=0) as ranked:
        buckets = list(ranked.weight_buckets(BOUND))
        whole = ranked.weights_for_sync()
        stream = ranked.weight_buckets(BOUND)
        next(stream)
        stream.close()  # the engine failed after one bucket: the rest is drained
        assert not ranked.stopped
        again = _union(list(ranked.weight_buckets(BOUND)))
        if lora:
            ranked.save_adapter(tmp_path / "ranked")
    assert len(buckets) > 2
    for bucket in buckets:
        sizes = {id(t): tensor_bytes(t) for t in bucket.values()}
        assert sum(sizes.values()) <= BOUND or len(sizes) == 1
    streamed = _union(buckets)
    assert streamed.keys() == whole.keys() == again.keys()
    for name in whole:
        assert torch.equal(streamed[name], whole[name]), name
        assert torch.equal(again[name], whole[name]), name
    if lora:
        single = Trainer(tiny_model_path, config(None, lora), pad_token_id=0)
        single.save_adapter(tmp_path / "single")
        got = load_file(tmp_path / "ranked" / "adapter_model.safetensors")
        want = load_file(tmp_path / "single" / "adapter_model.safetensors")
        assert got.keys() == want.keys() and all(".lora_" in k for k in got)
        assert all(torch.equal(got[k], want[k]) for k in want)
