"""The memory plan (``trainer/memory_plan.py``): its parameter count is the checkpoint's,
its state follows the strategy, LoRA and the reference, and ``reinforge config
--memory`` prints it. Its figures against measured runs: ``test_sharded_start.py``
(2 FSDP2 ranks) and the single-process test below."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from reinforge.trainer.memory_plan import (
    KNOWN_SHAPES,
    ModelShape,
    RunShape,
    plan_memory,
    saved_bytes_per_token,
)
from reinforge.trainer.trainer_config import TrainerConfig


def checkpoint_parameters(model_path: Path) -> int:
    from safetensors import safe_open

    with safe_open(str(model_path / "model.safetensors"), framework="pt") as f:
        return sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())  # noqa: SIM118


def cfg(**data: Any) -> TrainerConfig:
    return TrainerConfig.model_validate(data)


def test_the_parameter_count_from_config_json_is_the_checkpoints(
    tiny_model_path: Path, real_model_path: Path
) -> None:
    for path in (tiny_model_path, real_model_path):
        assert ModelShape.from_path(path).parameters == checkpoint_parameters(path)
    # the public sizes of the shapes docs/scale_out.md plans for
    sizes = {k: round(s.parameters / 1e9, 2) for k, s in KNOWN_SHAPES.items()}
    assert sizes == {"qwen2.5-1.5b": 1.54, "qwen2.5-7b": 7.62, "qwen2.5-14b": 14.77}


def test_fsdp2_shards_the_state_and_ddp_does_not() -> None:
    shape = KNOWN_SHAPES["qwen2.5-7b"]
    one = plan_memory(shape, cfg())
    fsdp = plan_memory(shape, cfg(parallel={"world_size": 8, "strategy": "fsdp2"}))
    ddp = plan_memory(shape, cfg(parallel={"world_size": 8, "strategy": "ddp"}))
    params = shape.parameters
    assert one.state_bytes == 4 * params * 4  # fp32 weights, gradients, two moments
    assert fsdp.state_bytes == pytest.approx(one.state_bytes / 8, rel=1e-6)
    assert ddp.state_bytes == one.state_bytes
    assert fsdp.rank["reference"] == pytest.approx(params * 4 / 8, rel=1e-6)  # grpo: KL
    # starting sharded: a rank's share of policy and reference, not the whole model
    assert fsdp.start_bytes < one.start_bytes / 4


def test_lora_trains_only_the_adapters_and_has_no_separate_reference() -> None:
    shape = KNOWN_SHAPES["qwen2.5-1.5b"]
    plan = plan_memory(shape, cfg(lora={"enabled": True, "r": 8}))
    h, kv, i = 1536, 2 * 128, 8960
    per_layer = 8 * ((h + h) * 2 + (h + kv) * 2 + 2 * (h + i) + (i + h))
    assert plan.rank["trainable"] == 28 * per_layer * 4
    assert plan.rank["frozen base"] == shape.parameters * 4
    assert "reference" not in plan.rank


def test_activation_checkpointing_is_on_by_default_with_ranks_and_shrinks_activations() -> None:
    shape = KNOWN_SHAPES["qwen2.5-7b"]
    ranks = cfg(parallel={"world_size": 8, "strategy": "fsdp2"})
    assert ranks.checkpoint_activations and not cfg().checkpoint_activations
    off = cfg(parallel={"world_size": 8, "strategy": "fsdp2"}, gradient_checkpointing=False)
    assert (
        plan_memory(shape, ranks).rank["activations"] * 4
        < plan_memory(shape, off).rank["activations"]
    )


def _saved_by_one_layer(model: Any, layer: int, rows: int, length: int) -> int:
    """Bytes autograd keeps for backward from decoder layer ``layer``'s forward: every
    saved tensor's storage counted once, without the parameters themselves, the
    tensors earlier layers saved already (rotary cos/sin, the mask) and autocast's
    weight copies (bf16 tensors of a weight's shape or its transpose: the plan counts
    them per layer)."""
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    weights = {tuple(p.shape) for p in model.model.layers[layer].parameters()}
    weights |= {shape[::-1] for shape in weights}  # kept transposed, too
    where = [-1]
    saved: dict[int, tuple[int, int]] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        ptr = tensor.untyped_storage().data_ptr()
        cast = tensor.dtype == torch.bfloat16 and tuple(tensor.shape) in weights
        if ptr not in params and ptr not in saved and not cast:
            saved[ptr] = (where[0], tensor.untyped_storage().nbytes())
        return tensor

    hooks = [
        block.register_forward_pre_hook(lambda *_, i=i: where.__setitem__(0, i))
        for i, block in enumerate(model.model.layers)
    ]  # and the final norm's (after the last layer) are not the layer's
    hooks.append(model.model.norm.register_forward_pre_hook(lambda *_: where.__setitem__(0, -1)))
    ids = torch.randint(10, 1000, (rows, length), generator=torch.Generator().manual_seed(0))
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            model.model(input_ids=ids, use_cache=False)
    finally:
        for hook in hooks:
            hook.remove()
    return sum(size for owner, size in saved.values() if owner == layer)


@pytest.mark.parametrize("attention", ["eager", "sdpa"])
@pytest.mark.parametrize("autocast", [False, True], ids=["fp32", "bf16_autocast"])
def test_a_layers_saved_tensors_are_what_the_plan_counts(
    attention: str, autocast: bool, tiny_model_path: Path
) -> None:
    """The plan's bytes per token and layer against what autograd saves in a forward
    pass of a real decoder (the tiny SmolLM2-shaped model), in each mode it models."""
    import contextlib

    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        tiny_model_path, dtype=torch.float32, attn_implementation=attention
    ).train()
    rows, length = 3, 20  # 60 tokens: no activation has a weight's shape
    context = (
        torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False)
        if autocast
        else contextlib.nullcontext()
    )
    with context:
        measured = _saved_by_one_layer(model, 1, rows, length)
    shape = ModelShape.from_path(tiny_model_path)
    planned = saved_bytes_per_token(
        shape, 2 if autocast else 4, autocast, length if attention == "eager" else None
    )
    # what is left: each RMSNorm's 1/rms per token (4 bytes each), not counted
    assert measured / (rows * length) == pytest.approx(planned, rel=0.02)


def test_the_plan_of_one_process_matches_its_measured_state(tiny_model_path: Path) -> None:
    from reinforge.core import Experience
    from reinforge.core.eid import EID
    from reinforge.trainer.trainer import Trainer

    exps = []
    for i in range(4):
        exp = Experience(
            tokens=torch.arange(10, 22), prompt_length=8, logprobs=-torch.ones(4), reward=i % 2
        )
        exp.eid = EID(batch=1, task=i // 2, run=i % 2)
        exps.append(exp)
    settings = cfg(algorithm_args={"kl_loss": "none"})
    trainer = Trainer(tiny_model_path, settings, pad_token_id=0)
    trainer.train_step(exps)
    plan = plan_memory(ModelShape.from_path(tiny_model_path), settings, RunShape())
    assert trainer.state_bytes() == pytest.approx(plan.state_bytes, rel=0.15)


def test_config_memory_prints_the_plan(tmp_path: Path) -> None:
    from reinforge.cli.main import app

    config = tmp_path / "cfg.yaml"
    config.write_text(
        "project: mem\nmodel: {engine: mock, model_path: tiny-random-smollm2}\n"
        "buffer: {batch_size: 4, explorer_input: {taskset: {path: t.jsonl, "
        "default_workflow: simple_workflow}}}\n"
    )
    args = ["config", "-c", str(config), "--memory", "--set", "trainer.parallel.world_size=8"]
    shaped = CliRunner().invoke(app, [*args, "--model-shape", "qwen2.5-14b"])
    assert shaped.exit_code == 0, shaped.output
    assert "# memory plan" in shaped.output and "14.77B parameters (8 ranks, ddp)" in shaped.output
    own = CliRunner().invoke(app, args)
    assert own.exit_code == 0, own.output
    assert "0.00B parameters" in own.output or "tiny-random-smollm2" in own.output
    bad = CliRunner().invoke(app, [*args, "--model-shape", "nope"])
    assert bad.exit_code != 0 and "not a known shape" in bad.output
