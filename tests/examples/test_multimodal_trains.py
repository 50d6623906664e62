"""GRPO on images with ``reinforge run``: the tiny VLM, 2 steps, the shipped shape taskset.

The tiny random model never counts right, so a plugin reward scores the parity of the
reply's length: rewards then differ within a group and GRPO moves the weights. The
test checks what the buffer kept (each experience decodes to the prompt with the
image's tokens and to the reply; its stored image tensors are the processor's output
for the row's image) and that the trainer's first forward reproduces the engine's
sampling log-probabilities, before and after a weight sync (``train/sampler/
ratio_mean`` ~ 1), on the ``hf`` engine and (marked ``vllm``) on a real vLLM server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.models.vision import build_prompt, split_media
from reinforge.workflows.multimodal import mm_user_message

DATA = Path(__file__).resolve().parents[2] / "examples" / "multimodal" / "data"

PLUGIN = """
from reinforge.rewards import REWARD_FUNCTIONS, RewardFn


@REWARD_FUNCTIONS.register_module("test_parity_reward", force=True)
class ParityReward(RewardFn):
    def __call__(self, response, **kwargs):
        return {"parity": float(len(response) % 2 == 0)}
"""

CONFIG = """
project: mm
name: t
plugins: [parity_reward.py]
model:
  model_path: tiny-random-smolvlm
  max_response_tokens: 6
  max_model_len: 512
%s
buffer:
  batch_size: 2
  total_steps: 2
  explorer_input:
    taskset:
      path: %s
      format:
        prompt_key: question
        response_key: answer
        image_key: image
        prompt_template: "{prompt} Answer with just the number."
      rollout_args: {max_tokens: 6}
      repeat_times: 4
      default_workflow_type: %s
      default_reward_fn_type: test_parity_reward
trainer:
  algorithm: grpo
  lr: 1.0e-3
  micro_batch_size: 8
explorer:
  runner_concurrency: 2
  eval_on_start: false
monitor: {progress: false, tensorboard: false, plot: false}
"""


HF_ENGINE = "  engine: hf\n  hf: {batch_window_ms: 2, dtype: float32}"


@pytest.mark.parametrize("workflow", ["simple_mm_workflow", "async_simple_mm_workflow"])
def test_grpo_on_images_reproduces_sampling_logprobs(
    tmp_path: Path, tiny_vlm_path: Path, workflow: str
) -> None:
    _train_and_check(tmp_path, tiny_vlm_path, workflow, HF_ENGINE, 1e-4)


@pytest.mark.vllm
def test_grpo_on_images_with_vllm(tmp_path: Path, tiny_vlm_path: Path, vllm_python: str) -> None:
    """The same on a real vLLM server: it samples the images, reinforge syncs its weights."""
    engine = (
        "  engine: vllm\n"
        f"  vllm: {{python: {vllm_python}, kv_cache_gb: 1, work_dir: {tmp_path / 'vllm'}}}"
    )
    _train_and_check(tmp_path, tiny_vlm_path, "simple_mm_workflow", engine, 1e-3)


def _train_and_check(
    tmp_path: Path, tiny_vlm_path: Path, workflow: str, engine: str, tolerance: float
) -> None:
    (tmp_path / "parity_reward.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(CONFIG % (engine, DATA / "train.jsonl", workflow))
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])

    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps = storage.read()
    finally:
        storage.close()
    assert len(exps) == 2 * 2 * 4  # steps x tasks x repeats
    assert {e.reward for e in exps} == {0.0, 1.0}
    lines = (DATA / "train.jsonl").read_text().splitlines()
    rows = {row["image"]: row for row in map(json.loads, lines)}
    processor = _processor(tiny_vlm_path)
    tokenizer = processor.tokenizer
    for exp in exps:
        # what the agent saw: the prompt with the image's tokens, and the image itself
        prompt = tokenizer.decode(exp.tokens[: exp.prompt_length].tolist())
        assert "How many circles are in the image? Answer with just the number." in prompt
        assert prompt.count("<image>") == 16  # the tiny VLM's tokens per image
        user = exp.messages[0]
        url = user["content"][0]["image_url"]["url"]
        row = rows[url]
        media = split_media([mm_user_message(row["question"], [row["image"]], [])])
        expected = build_prompt(processor, media).inputs
        assert exp.multi_modal_inputs.keys() == expected.keys()
        for name, tensor in expected.items():
            assert torch.equal(exp.multi_modal_inputs[name], tensor), name
        # what it said: the sampled ids decode to the recorded reply
        reply = tokenizer.decode(exp.tokens[exp.prompt_length :].tolist())
        assert reply.startswith(exp.response_text)
        assert exp.messages[-1] == {"role": "assistant", "content": exp.response_text}

    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    trained = [m for m in metrics if "train/loss" in m]
    assert [m["step"] for m in trained] == [1, 2]
    for m in trained:  # step 2 samples with the synced weights of step 1
        assert m["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=tolerance)
    before = load_file(str(next(tiny_vlm_path.glob("*.safetensors"))))
    after: dict[str, torch.Tensor] = {}
    for f in (run_dir / "checkpoints" / "step_2" / "model").glob("*.safetensors"):
        after.update(load_file(str(f)))
    assert any(k in after and not torch.equal(v, after[k]) for k, v in before.items())

    if workflow == "simple_mm_workflow":  # the export is a VLM directory transformers loads
        out = tmp_path / "exported"
        result = CliRunner().invoke(app, ["export", str(run_dir), str(out)])
        assert result.exit_code == 0, (result.exception, result.output[-3000:])
        from transformers import AutoModelForImageTextToText

        exported = AutoModelForImageTextToText.from_pretrained(str(out), local_files_only=True)
        assert torch.equal(exported.state_dict()[next(iter(after))], next(iter(after.values())))
        assert type(_processor(out)).__name__ == "Idefics3Processor"


def _processor(path: Path):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(path), local_files_only=True)
