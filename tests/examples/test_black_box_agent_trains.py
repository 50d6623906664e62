"""A black-box agent in a subprocess trains through the recording endpoint (tiny model, 2 steps).

The example's ``agent.py`` runs as a separate program for every rollout, on the plain
OpenAI SDK, against the recording endpoint its workflow opened. The tiny random model
never writes the right number, so the test's plugin scores the parity of the agent's
printed answer's length instead: rewards then differ within a group and GRPO must
move the weights. The stored conversations must also match the sampling log-probs
(the trainer's first forward reproduces them: ratio ~1).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "black_box_agent"

PLUGIN = """
from reinforge.rewards import REWARD_FUNCTIONS, RewardFn


@REWARD_FUNCTIONS.register_module("test_answer_parity")
class AnswerParity(RewardFn):
    def __call__(self, response, truth=None, **kwargs):
        return {"parity": float(len(response) % 2 == 0)}
"""

CONFIG = f"""
project: bb
name: t
plugins: [{str(EXAMPLE / "workflow.py")!r}, parity.py]
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 6
  hf: {{batch_window_ms: 2}}
buffer:
  batch_size: 2
  total_steps: 2
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {{prompt_key: question, response_key: answer}}
      repeat_times: 4
      default_workflow_type: arithmetic_black_box_agent
      default_reward_fn_type: test_answer_parity
      workflow_args: {{timeout: 120}}
trainer:
  algorithm: grpo
  lr: 1.0e-3
  micro_batch_size: 4
explorer:
  runner_concurrency: 4
  eval_on_start: false
  rollout_model: {{enable_history: true}}
monitor: {{progress: false, tensorboard: false, plot: false}}
"""


def test_a_black_box_agent_in_a_subprocess_trains(
    tmp_path: Path, tiny_model_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("AGENT_MAX_TOKENS", "6")
    (tmp_path / "parity.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for q, a in [("1 + 1 =", 2), ("2 + 3 =", 5), ("4 + 4 =", 8), ("3 + 6 =", 9)]:
            fh.write(json.dumps({"question": q, "answer": a}) + "\n")
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
    assert len(exps) == 2 * 2 * 4  # steps x tasks x repeats: one conversation per agent run
    for exp in exps:
        mask = "".join(str(int(m)) for m in exp.action_mask.tolist())
        assert re.fullmatch(r"1+0+1+", mask), mask  # reply, masked check message, reply
        glue = exp.tokens[exp.prompt_length :][~exp.action_mask]
        assert "Check your answer" in _decode(tiny_model_path, glue.tolist())
    assert {e.reward for e in exps} == {0.0, 1.0}

    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "train/loss" in r]
    assert [r["step"] for r in trained] == [1, 2]
    assert all(abs(r["train/sampler/ratio_mean"] - 1) < 0.01 for r in trained), trained
    before = load_file(str(next(tiny_model_path.glob("*.safetensors"))))
    after: dict[str, torch.Tensor] = {}
    for f in (run_dir / "checkpoints" / "step_2" / "model").glob("*.safetensors"):
        after.update(load_file(str(f)))
    assert any(k in after and not torch.equal(v, after[k]) for k, v in before.items())


def _decode(model_path: Path, ids: list[int]) -> str:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_path)).decode(ids)


def test_the_example_config_explores_with_the_mock_policy(tmp_path: Path) -> None:
    """examples/black_box_agent/grpo.yaml as shipped (its plugin, taskset and reward),
    the model swapped for the mock arithmetic policy: every agent run answers right."""
    run_dir = tmp_path / "run"
    overrides = [
        "model.engine=mock", "model.model_path=mock", "model.mock.policy=arithmetic",
        "buffer.total_steps=1", "buffer.batch_size=2",
        "buffer.explorer_input.taskset.repeat_times=2", "monitor.progress=false",
    ]  # fmt: skip
    args = ["explore", "-c", str(EXAMPLE / "grpo.yaml"), "--run-dir", str(run_dir)]
    for item in overrides:
        args += ["--set", item]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps = storage.read()
    finally:
        storage.close()
    assert len(exps) == 2 * 2 and all(e.reward == 1.0 for e in exps)
