"""The parallel strategy is one object chosen from the config (``sharding/strategy.py``):
``Single`` in one process, ``DDP`` or ``FSDP2`` on ranks, and the trainer's modules ask
it what to do instead of comparing strategy names."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from reinforge.trainer.sharding.strategy import DDP, FSDP2, RankContext, Single, make_strategy

SRC = Path(__file__).resolve().parents[2] / "src" / "reinforge"


@pytest.mark.parametrize(
    ("ctx", "kind"),
    [
        (RankContext(), Single),
        (RankContext(0, 1, "fsdp2"), Single),  # one rank: nothing to spread
        (RankContext(1, 2, "ddp"), DDP),
        (RankContext(0, 4, "fsdp2"), FSDP2),
    ],
)
def test_the_config_chooses_the_strategy(ctx: RankContext, kind: type) -> None:
    strategy = make_strategy(ctx, torch.device("cpu"), "bf16")
    assert type(strategy) is kind
    assert strategy.mixed_precision == "bf16"
    assert strategy.sharded == strategy.starts_sharded == (kind is FSDP2)
    assert strategy.reentrant_checkpointing == (kind is Single)


def test_an_unknown_strategy_is_an_error_naming_the_setting() -> None:
    with pytest.raises(ValueError, match=r"trainer\.parallel\.strategy"):
        make_strategy(RankContext(0, 2, "zero3"), torch.device("cpu"))


def test_fp16_gets_the_scaler_of_its_strategy() -> None:
    cpu = torch.device("cpu")
    assert make_strategy(RankContext(), cpu, "no").grad_scaler() is None
    assert type(make_strategy(RankContext(), cpu, "fp16").grad_scaler()).__name__ == "GradScaler"
    fsdp = make_strategy(RankContext(0, 2, "fsdp2"), cpu, "fp16").grad_scaler()
    assert type(fsdp).__name__ == "ShardedGradScaler"


def test_no_trainer_module_branches_on_the_strategy_name() -> None:
    pattern = re.compile(r"\.strategy\s*[!=]=|==\s*\"(ddp|fsdp2|single)\"")
    found = [
        f"{path.relative_to(SRC)}:{n}"
        for path in sorted((SRC / "trainer").rglob("*.py"))
        # the memory plan works out each strategy's bytes: it names them on purpose
        if path.name not in ("strategy.py", "memory_plan.py")
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []
