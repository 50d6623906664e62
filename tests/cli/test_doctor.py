"""``reinforge doctor`` on the tiny model: a healthy config passes, and each broken piece
fails its own check: a template that is not append-only, a tool parser that drops
calls, a constant reward, a workflow that re-tokenises its turn, and top-p sampling
under a ratio the trainer does not correct for it.

Each run samples real rollouts (hf engine, tiny random model) and runs the trainer's
forward; 2 rows x 2 rollouts of 8 tokens keep a run to a few seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app

PLUGIN = '''
from reinforge import RewardFn, Workflow, WORKFLOWS
from reinforge.core import Experience


class TruthReward(RewardFn):
    """The row's answer as the reward: it varies over rows, whatever the model says."""

    def __call__(self, response, truth=None, prompt=None, **kwargs):
        return {"accuracy": float(truth)}


class ConstantReward(RewardFn):
    def __call__(self, response, truth=None, prompt=None, **kwargs):
        return {"accuracy": 1.0}


@WORKFLOWS.register_module("doctor_test_retokenizing", force=True)
class Retokenizing(Workflow):
    """Samples a reply, then rebuilds the conversation from its text (TRL's way): the
    re-rendered, re-encoded turn is not the sampled ids."""

    def run(self):
        messages = [{"role": "user", "content": self.task.raw_task["question"]}]
        (sampled,) = self.model.chat(messages)
        tok = self.model.tokenizer
        prompt = tok.encode(tok.render_chat(messages, add_generation_prompt=True))
        reply = {"role": "assistant", "content": sampled.response_text}
        full = tok.encode(tok.render_chat([*messages, reply], add_generation_prompt=False))
        reward = float(self.task.raw_task["answer"])
        return [Experience(tokens=full, prompt_length=len(prompt), reward=reward)]
'''

CONFIG = """
project: doctor
name: t
mode: both
plugins: [doctor_plugin.py]
model:
  model_path: {model}
  engine: hf
  max_response_tokens: 8
buffer:
  batch_size: 2
  explorer_input:
    taskset:
      name: train
      path: tasks.jsonl
      format: {{prompt_key: question, response_key: answer}}
      repeat_times: 2
      rollout_args: {{top_p: {top_p}}}
      default_workflow_type: {workflow}
      default_reward_fn_type: {reward}
    eval_tasksets:
      - name: ev
        path: tasks.jsonl
        format: {{prompt_key: question, response_key: answer}}
        default_workflow_type: simple_workflow
        default_reward_fn_type: doctor_plugin.TruthReward
trainer:
  algorithm: grpo
  algorithm_args: {{kl_loss: none}}
explorer:
  runner_concurrency: 2
"""

#: a template that renders only the last two messages: later turns rewrite earlier ones
NOT_APPEND_ONLY = (
    "{% for message in messages[-2:] %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def project(
    tmp_path: Path,
    model: Path,
    *,
    workflow: str = "simple_workflow",
    reward: str = "doctor_plugin.TruthReward",
    top_p: float = 1.0,
) -> Path:
    (tmp_path / "doctor_plugin.py").write_text(PLUGIN)
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(2):
            fh.write(json.dumps({"question": f"What is {i} + 0?", "answer": str(i)}) + "\n")
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG.format(model=model, workflow=workflow, reward=reward, top_p=top_p))
    return cfg


def statuses(cfg: Path) -> dict[str, str]:
    """Each check's status from ``run_doctor`` on ``cfg`` (2 rows, 2 rollouts each)."""
    from reinforge.cli.doctor_cmd import run_doctor
    from reinforge.config import load_config

    findings = run_doctor(load_config(cfg, []), rows=2, repeats=2)
    return {f.check: f.status for f in findings}


def test_a_healthy_config_passes_and_exits_0(tmp_path: Path, tiny_model_path: Path) -> None:
    cfg = project(tmp_path, tiny_model_path)
    result = CliRunner().invoke(app, ["doctor", "-c", str(cfg), "--rows", "2", "--repeats", "2"])
    assert result.exit_code == 0, result.output
    assert "no check failed" in result.output
    for check in ("chat template", "tool calls", "sampling", "sampled tokens", "reward"):
        assert check in result.output
    assert "tasks: train" in result.output and "tasks: ev" in result.output
    assert "sampler vs trainer" in result.output and "mean |Δ|" in result.output
    assert " fail " not in result.output


def test_a_template_that_is_not_append_only_fails(tmp_path: Path, tiny_model_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    for item in tiny_model_path.iterdir():
        if item.name != "chat_template.jinja":
            (model / item.name).symlink_to(item)
    (model / "chat_template.jinja").write_text(NOT_APPEND_ONLY)
    found = statuses(project(tmp_path, model))
    assert found["chat template"] == "fail"


def test_a_tool_parser_that_drops_calls_fails(
    tmp_path: Path, tiny_model_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reinforge.models.tool_format import ParsedReply
    from reinforge.models.wrapper import experiences

    def drops_calls(text: str) -> Any:
        return ParsedReply(content=text)  # finds no call, reports no error

    monkeypatch.setattr(experiences, "parse_tool_calls", drops_calls)
    found = statuses(project(tmp_path, tiny_model_path))
    assert found["tool calls"] == "fail"


def test_a_constant_reward_fails(tmp_path: Path, tiny_model_path: Path) -> None:
    found = statuses(project(tmp_path, tiny_model_path, reward="doctor_plugin.ConstantReward"))
    assert found["reward"] == "fail"
    assert found["sampled tokens"] == "pass"


def test_a_workflow_that_retokenises_its_turn_fails(tmp_path: Path, tiny_model_path: Path) -> None:
    found = statuses(project(tmp_path, tiny_model_path, workflow="doctor_test_retokenizing"))
    assert found["sampled tokens"] == "fail"
    assert found["reward"] == "pass"


def test_top_p_sampling_under_an_uncorrected_ratio_fails_and_exits_1(
    tmp_path: Path, tiny_model_path: Path
) -> None:
    cfg = project(tmp_path, tiny_model_path, top_p=0.9)
    result = CliRunner().invoke(app, ["doctor", "-c", str(cfg), "--rows", "2", "--repeats", "2"])
    assert result.exit_code == 1, result.output
    assert "top_p=0.9" in result.output
    assert "1 check(s) failed" in result.output  # the sampling line, nothing else
