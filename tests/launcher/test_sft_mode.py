"""``mode: sft`` end to end with the tiny model (in process, through the CLI): metrics,
checkpoints, plots and export like any run; an interrupted run resumed equals an
uninterrupted one; RL with ``model.init_from`` starts policy, reference and engine
from the SFT weights (and mixes demonstrations in with ``trainer.sft_aux``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.monitor.jsonl import read_jsonl
from reinforge.trainer.checkpoint import load_weights

TOOLS = [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}]


def _demo(i: int) -> dict[str, Any]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "calc", "arguments": json.dumps({"expr": f"{i}*7"})},
    }
    return {
        "messages": [
            {"role": "user", "content": f"What is {i} times 7?"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": str(i * 7)},
            {"role": "assistant", "content": f"{i * 7}."},
        ],
        "tools": TOOLS,
    }


SFT_CONFIG = """
project: sft
name: t
run_dir: {run_dir}
model: {{model_path: tiny-random-smollm2, engine: hf}}
buffer:
  batch_size: 3
  total_epochs: 2
  trainer_input:
    experience_buffer: {{path: demos.jsonl, length_bucket_window: 2}}
trainer: {{lr: 1.0e-3, micro_batch_size: 2}}
checkpoint: {{save_interval: 2}}
monitor: {{progress: false, tensorboard: false}}
"""

PLUGIN = '''
from reinforge import Workflow


class FirstToken(Workflow):
    """Samples 3 tokens after a short prompt; rewards an even first token."""

    can_repeat = True

    def run(self):
        exps = self.model.generate(["Q" + str(self.task.raw_task["prompt"])], n=self.repeat_times)
        for i, exp in enumerate(exps):
            exp.reward = float(int(exp.tokens[exp.prompt_length]) % 2 == 0)
            exp.eid.run = self.run_id_base + i
        return exps
'''

RL_CONFIG = """
project: rl
name: t
run_dir: {run_dir}
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 3
  init_from: {init_from}
buffer:
  batch_size: 2
  total_steps: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      repeat_times: 2
      default_workflow_type: rf_sft_plugin.FirstToken
trainer:
  algorithm: grpo
  lr: 1.0e-3
  algorithm_args: {{kl_loss_coef: 0.1}}
  sft_aux: {{path: {demos}, weight: 0.5, batch_size: 2}}
monitor: {{progress: false, tensorboard: false, plot: false}}
"""


def _project(folder: Path, rows: int = 10) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(_demo(i)) for i in range(rows)]
    (folder / "demos.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def _sft_config(folder: Path, run_dir: Path) -> Path:
    path = folder / "sft.yaml"
    path.write_text(SFT_CONFIG.format(run_dir=run_dir))
    return path


def _invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    return result


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory) -> Path:
    """An uninterrupted SFT run: 10 conversations, batches of 3, 2 epochs = 8 steps."""
    folder = _project(tmp_path_factory.mktemp("sft"))
    run_dir = folder / "run"
    result = _invoke("sft", "-c", str(_sft_config(folder, run_dir)))
    assert result.exit_code == 0, result.output
    return run_dir


def test_sft_run_logs_checkpoints_plots_and_exports(sft_run, tmp_path):
    rows = [r for r in read_jsonl(sft_run / "metrics.jsonl") if "train/sft/loss" in r]
    assert [r["step"] for r in rows] == list(range(1, 9))
    losses = [r["train/sft/loss"] for r in rows]
    assert losses[-1] < losses[0]  # it learns the demonstrations
    assert sum(r["train/experiences"] for r in rows) == 20  # every row, each epoch
    # an SFT row is dated with the version it trains (never stale): 0 versions behind
    assert all(r["train/staleness_max"] == 0.0 for r in rows)
    assert json.loads((sft_run / "config.json").read_text())["trainer"]["algorithm"] == "sft"
    assert (sft_run / "checkpoints" / "step_8" / "state.json").is_file()
    assert list((sft_run / "plots").glob("*.png"))
    out = tmp_path / "hf"
    result = _invoke("export", str(sft_run), str(out))
    assert result.exit_code == 0, result.output
    exported = load_weights(out)
    saved = load_weights(sft_run / "checkpoints" / "step_8" / "model")
    assert all(torch.equal(exported[k], saved[k]) for k in saved)


def test_interrupted_run_resumes_to_the_same_weights(sft_run, tmp_path):
    from reinforge.trainer.trainer import Trainer

    folder = _project(tmp_path)
    run_dir = folder / "run"
    config = _sft_config(folder, run_dir)
    original = Trainer.train_step
    calls = {"n": 0}
    strict = ["--set", "trainer.max_staleness=0"]  # demonstrations are never stale

    def interrupt_at_step_5(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Trainer, "train_step", interrupt_at_step_5)
        result = _invoke("sft", "-c", str(config), *strict)
    assert result.exit_code != 0 and "interrupted at step 4" in result.output
    result = _invoke("sft", "-c", str(config), *strict)
    assert result.exit_code == 0, result.output
    assert "resuming the trainer" in result.output
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "train/sft/loss" in r]
    assert [r["step"] for r in rows] == list(range(1, 9))  # each step logged once
    resumed = load_weights(run_dir / "checkpoints" / "step_8" / "model")
    straight = load_weights(sft_run / "checkpoints" / "step_8" / "model")
    for name, tensor in straight.items():
        torch.testing.assert_close(resumed[name], tensor, atol=1e-6, rtol=1e-5)


def test_rl_after_sft_starts_policy_reference_and_engine_from_the_sft_weights(
    sft_run, tmp_path, monkeypatch
):
    from transformers import AutoModelForCausalLM

    from reinforge.buffer import SQLiteExperienceStorage
    from reinforge.config import load_config
    from reinforge.launcher.run_trainer import make_trainer
    from reinforge.launcher.session import RunSession
    from reinforge.models.catalog import resolve_model_path

    folder = tmp_path
    (folder / "tasks.jsonl").write_text(
        "\n".join(json.dumps({"prompt": str(i), "response": "0"}) for i in range(4))
    )
    (folder / "rf_sft_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))
    config = folder / "rl.yaml"
    config.write_text(
        RL_CONFIG.format(
            run_dir=folder / "run", init_from=sft_run, demos=sft_run.parent / "demos.jsonl"
        )
    )
    sft_weights = load_weights(sft_run / "checkpoints" / "step_8" / "model")

    cfg = load_config(config)
    session = RunSession.open(cfg)
    try:
        trainer, trained = make_trainer(session)
        assert trained == 0 and trainer.ref_model is not None
        for model in (trainer.model, trainer.ref_model):
            state = model.state_dict()
            assert all(torch.equal(state[k], v.to(state[k].dtype)) for k, v in sft_weights.items())
        assert trainer.global_step == 0  # a fresh optimiser and schedule
        engine_state = session.explorer.engine.model.state_dict()
        assert all(torch.equal(engine_state[k], v) for k, v in sft_weights.items())
    finally:
        session.close()

    result = _invoke("run", "-c", str(config))
    assert result.exit_code == 0, result.output
    (row,) = [r for r in read_jsonl(folder / "run" / "metrics.jsonl") if "train/loss" in r]
    assert row["train/sft_aux/experiences"] == 2 and row["train/sft_aux/loss"] > 0
    storage = SQLiteExperienceStorage(folder / "run" / "buffer.db")
    exps = storage.read_batch(1)
    storage.close()

    def scored(model) -> torch.Tensor:
        from reinforge.algorithms import collate
        from reinforge.trainer.token_logprobs import token_logprobs

        batch = collate(exps, 0)
        with torch.no_grad():
            logp, _ = token_logprobs(model, batch, only=batch.response_mask)
        return logp[batch.loss_mask]

    sampled = torch.cat([e.logprobs[e.action_mask.bool()] for e in exps])
    base_path = resolve_model_path("tiny-random-smollm2")
    sft_model = AutoModelForCausalLM.from_pretrained(base_path, local_files_only=True)
    sft_model.load_state_dict(sft_weights, strict=False)
    base_model = AutoModelForCausalLM.from_pretrained(base_path, local_files_only=True)
    # the engine sampled step 1 with the SFT weights, not the base model's
    torch.testing.assert_close(sampled, scored(sft_model), atol=1e-4, rtol=1e-4)
    assert (sampled - scored(base_model)).abs().max() > 1e-2


def test_init_from_needs_an_engine_with_weights(sft_run, tmp_path):
    config = tmp_path / "cfg.yaml"
    config.write_text(f"model: {{engine: mock, init_from: {sft_run}}}\nrun_dir: {tmp_path}/r\n")
    result = _invoke("explore", "-c", str(config))
    assert result.exit_code == 2
    assert "model.init_from needs model.engine: hf or vllm" in result.output


@pytest.mark.slow
def test_sft_on_the_real_model_learns_the_tool_call_demonstrations(tmp_path):
    """4 steps on 6 tool-call conversations (2 epochs): the demonstrations' loss falls."""
    folder = _project(tmp_path, rows=6)
    config = _sft_config(folder, folder / "run")
    text = config.read_text().replace("tiny-random-smollm2", "smollm2-135m-instruct")
    config.write_text(text.replace("lr: 1.0e-3", "lr: 2.0e-5"))
    result = _invoke("sft", "-c", str(config), "--set", "checkpoint.save_interval=null")
    assert result.exit_code == 0, result.output
    rows = [r for r in read_jsonl(folder / "run" / "metrics.jsonl") if "train/sft/loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    first_epoch = sum(r["train/sft/loss"] for r in rows[:2])
    second_epoch = sum(r["train/sft/loss"] for r in rows[2:])
    assert second_epoch < first_epoch
