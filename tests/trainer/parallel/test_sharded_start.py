"""FSDP2 ranks start from their shards alone (``trainer/sharded_start.py``).

On 2 gloo ranks (spawned processes building the real :class:`Trainer`):

- each rank's resident memory grows by about half the model while it starts, where
  the old start (the whole model built, then sharded) grew by the whole model: the
  sum over both ranks stays under 1.2 copies of the model;
- the sharded start gives the weights the old start gives (policy, tied embeddings,
  rotary buffers, LoRA adapters, the KL reference), bf16 mixed precision keeps fp32
  shards, and the memory plan's state bytes match what each rank holds.

The old start is the same Trainer with ``FSDP2.starts_sharded`` off, as it was before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

WORLD = 2


def _status(field: str) -> int:
    """A line of /proc/self/status in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def _trainer(
    model_path: str,
    rank: int,
    settings: dict[str, Any],
    sharded: bool,
    init_weights: dict[str, torch.Tensor] | None = None,
) -> Any:
    from reinforge.trainer.sharding.strategy import FSDP2, RankContext
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig

    FSDP2.starts_sharded = sharded
    cfg = TrainerConfig.model_validate(
        {**settings, "parallel": {"world_size": WORLD, "strategy": "fsdp2"}}
    )
    ctx = RankContext(rank, WORLD, "fsdp2")
    return Trainer(
        model_path, cfg, pad_token_id=0, device="cpu", rank=ctx, init_weights=init_weights
    )


def _join(rank: int, folder: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo", init_method=f"file://{folder}/rendezvous", rank=rank, world_size=WORLD
    )


def _start_memory(rank: int, model_path: str, folder: str, sharded: bool) -> None:
    """How much this rank's resident memory grows while its trainer starts."""
    _join(rank, folder)
    try:
        import accelerate  # noqa: F401  (what any start imports, before the baseline)
        from torch.distributed import fsdp  # noqa: F401
        from transformers import AutoConfig, AutoModelForCausalLM

        import reinforge.trainer.sharded_start
        import reinforge.trainer.trainer  # noqa: F401

        config = AutoConfig.from_pretrained(model_path)
        with torch.device("meta"):
            AutoModelForCausalLM.from_config(config)
        dist.barrier()
        Path("/proc/self/clear_refs").write_text("5")  # the peak starts again here
        before = _status("VmRSS")
        trainer = _trainer(model_path, rank, {"algorithm_args": {"kl_loss": "none"}}, sharded)
        grown = _status("VmHWM") - before
        trainer.train_step(_experiences())  # AdamW's state exists after a step
        report = {"grown": grown, "state": trainer.state_bytes()}
        Path(folder, f"rank{rank}.json").write_text(json.dumps(report))
        dist.barrier()
    finally:
        dist.destroy_process_group()


def _experiences() -> list[Any]:
    """Two groups of two rollouts with a reward spread (a trainable GRPO step)."""
    from reinforge.core import Experience
    from reinforge.core.eid import EID

    out = []
    generator = torch.Generator().manual_seed(0)
    for i in range(4):
        exp = Experience(
            tokens=torch.randint(10, 40000, (12,), generator=generator),
            prompt_length=8,
            logprobs=-torch.rand(4, generator=generator),
            reward=float(i % 2),
        )
        exp.eid = EID(batch=1, task=i // 2, run=i % 2)
        out.append(exp)
    return out


def _reports(folder: Path) -> list[dict[str, Any]]:
    return [json.loads((folder / f"rank{r}.json").read_text()) for r in range(WORLD)]


@pytest.fixture(scope="module")
def mid_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random Llama of ~37M parameters (148 MB in fp32): big enough that half of it
    stands well above the noise of a process's resident memory."""
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("mid_model")
    config = LlamaConfig(
        hidden_size=512,
        intermediate_size=1376,
        num_hidden_layers=4,
        num_attention_heads=8,
        num_key_value_heads=4,
        vocab_size=49152,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.mark.parametrize("sharded", [True, False], ids=["sharded", "old"])
def test_two_fsdp2_ranks_start_with_at_most_1_2_copies_of_the_model(
    sharded: bool, mid_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reinforge.trainer.memory_plan import ModelShape, RunShape, plan_memory
    from reinforge.trainer.trainer_config import TrainerConfig

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    mp.spawn(_start_memory, args=(str(mid_model), str(tmp_path), sharded), nprocs=WORLD)
    reports = _reports(tmp_path)
    shape = ModelShape.from_path(mid_model)
    model_bytes = shape.parameters * 4
    grown = sum(r["grown"] for r in reports)
    if sharded:
        assert grown <= 1.2 * model_bytes, (grown, model_bytes)
    else:  # the old start: every rank held the whole model once
        assert grown >= WORLD * model_bytes, (grown, model_bytes)
    # the plan's start and state figures against this start's
    cfg = TrainerConfig.model_validate(
        {
            "algorithm_args": {"kl_loss": "none"},
            "parallel": {"world_size": WORLD, "strategy": "fsdp2"},
        }
    )
    plan = plan_memory(shape, cfg, RunShape(runtime_bytes=0))
    for report in reports:
        assert report["state"] == pytest.approx(plan.state_bytes, rel=0.15)
        if sharded:  # the shard, plus a process's own noise (CI saw +15%, 11 MB)
            assert 0.85 * plan.start_bytes <= report["grown"] <= 1.3 * plan.start_bytes, (
                report["grown"],
                plan.start_bytes,
            )


def _root_gathered(wrapped: Any) -> list[tuple[int, ...]]:
    """The shapes of the tensors FSDP2 gathers for the root unit in each forward and
    reduces in each backward (embeddings, final norm, the head when it is not tied):
    a tied head gathered on its own is one more vocabulary x hidden tensor a step."""
    group = wrapped._get_fsdp_state()._fsdp_param_group
    return sorted(tuple(p._orig_size) for p in group.fsdp_params)


def _weights(rank: int, model_path: str, folder: str, settings: dict[str, Any]) -> None:
    """Both starts' full policy and reference weights, gathered on rank 0."""
    from reinforge.trainer.sharding.strategy import full_state_dict, is_sharded

    _join(rank, folder)
    try:
        settings = dict(settings)
        init = None
        if settings.pop("init_from", False):  # other weights than the checkpoint's
            from safetensors.torch import load_file

            init = {k: v + 0.5 for k, v in load_file(f"{model_path}/model.safetensors").items()}
        out: dict[str, Any] = {}
        for sharded in (True, False):
            torch.manual_seed(0)
            trainer = _trainer(model_path, rank, settings, sharded, init)
            params = list(trainer.model.parameters())
            out[f"sharded_{sharded}"] = {
                "policy": full_state_dict(trainer.model),
                "reference": full_state_dict(trainer.ref_model)
                if trainer.ref_model is not None
                else {},
                "sharded": is_sharded(trainer.model)
                and (trainer.ref_model is None or is_sharded(trainer.ref_model)),
                "dtypes": sorted({str(p.dtype) for p in params}),
                "buffers": {k: v.clone() for k, v in trainer.model.named_buffers()},
                "root_gathered": _root_gathered(trainer.forward_module),
                "tied": trainer.model.get_output_embeddings().weight
                is trainer.model.get_input_embeddings().weight
                if not settings.get("lora", {}).get("enabled")
                else None,
            }
        if rank == 0:
            torch.save(out, Path(folder, "weights.pt"))
        dist.barrier()
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize(
    "settings",
    [
        {"algorithm": "grpo"},  # KL: a sharded reference beside the policy
        {"lora": {"enabled": True, "r": 4, "alpha": 8}, "algorithm": "grpo"},
        {"mixed_precision": "bf16", "algorithm": "grpo"},
        {"init_from": True, "algorithm": "grpo"},  # model.init_from's weights
    ],
    ids=["full_kl", "lora", "bf16", "init_from"],
)
def test_the_sharded_start_gives_the_weights_of_the_old_start(
    settings: dict[str, Any],
    tiny_model_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[3]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    mp.spawn(_weights, args=(str(tiny_model_path), str(tmp_path), settings), nprocs=WORLD)
    out = torch.load(tmp_path / "weights.pt")
    new, old = out["sharded_True"], out["sharded_False"]
    for part in ("policy", "reference"):
        assert new[part].keys() == old[part].keys()
        for name, tensor in old[part].items():
            assert torch.equal(new[part][name], tensor), (part, name)
    if "lora" not in settings:
        assert len(new["reference"]) > 0 and new["tied"] is True
    assert any("lora_A" in k for k in new["policy"]) == ("lora" in settings)
    if settings.get("init_from"):  # the init_from weights, not the checkpoint's
        from safetensors.torch import load_file

        saved = load_file(tiny_model_path / "model.safetensors")["model.norm.weight"]
        assert torch.equal(new["policy"]["model.norm.weight"], saved + 0.5)
        assert torch.equal(new["reference"]["model.norm.weight"], saved + 0.5)
    assert new["sharded"] and old["sharded"]
    # the step gathers what the old start's step gathers: a tied head is not a tensor
    # of its own (it was after the sharded start: one more vocabulary x hidden copy in
    # every forward and backward, about a parameter shard more at the step's peak)
    assert new["root_gathered"] == old["root_gathered"]
    assert new["buffers"].keys() == old["buffers"].keys()
    for name, buffer in old["buffers"].items():  # rotary inv_freq computed, not garbage
        assert torch.equal(new["buffers"][name], buffer), name
    # bf16 mixed precision computes in bf16 but keeps the fp32 shards (master weights)
    assert new["dtypes"] == ["torch.float32"]
