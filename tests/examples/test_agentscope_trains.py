"""AgentScope agents train through ``reinforge run`` (tiny model, 2 GRPO steps), and the
shipped AgentScope example configs run as written (mock policy).

The trained agent is an AgentScope ``Agent`` written in a plugin, handed to
``agentscope_workflow_adapter``; it records what its reply said, so the test can
check that each stored experience decodes to the question the agent was asked and
the reply it got. The tiny random model never answers right, so the reward is the
parity of the reply's length: rewards differ within a group and GRPO moves the
weights.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

pytest.importorskip("agentscope")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agentscope"

PLUGIN = """
from agentscope.agent import Agent, InjectionConfig, ReActConfig
from agentscope.message import UserMsg

SAID: dict[str, list[str]] = {}


async def brief_agent(raw_task, chat_model):
    agent = Agent(
        name="brief",
        system_prompt="Answer in one word.",
        model=chat_model,
        react_config=ReActConfig(max_iters=1),
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    reply = await agent.reply(UserMsg(name="user", content=raw_task["question"]))
    text = reply.get_text_content() or ""
    SAID.setdefault(raw_task["question"], []).append(text)
    return float(len(text) % 2 == 0)
"""

CONFIG = """
project: agentscope
name: t
plugins: [as_tiny_agent.py]
model:
  model_path: tiny-random-smollm2
  engine: hf
  max_response_tokens: 6
  hf: {batch_window_ms: 2}
buffer:
  batch_size: 2
  total_steps: 2
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 4
      default_workflow_type: agentscope_workflow_adapter
      workflow_args: {workflow_func: as_tiny_agent.brief_agent}
trainer:
  algorithm: grpo
  lr: 1.0e-3
  micro_batch_size: 4
explorer:
  runner_concurrency: 4
  eval_on_start: false
  rollout_model: {enable_history: true}
monitor: {progress: false, tensorboard: false, plot: false}
"""


def test_an_agentscope_agent_trains_through_the_adapter(tmp_path: Path, tiny_model_path) -> None:
    (tmp_path / "as_tiny_agent.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    questions = ["1 + 1 =", "2 + 3 =", "4 + 4 =", "3 + 6 ="]
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for q in questions:
            fh.write(json.dumps({"question": q, "answer": eval(q[:-2])}) + "\n")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])

    said = sys.modules["as_tiny_agent"].SAID
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps = storage.read()
    finally:
        storage.close()
    assert len(exps) == 2 * 2 * 4  # steps x tasks x repeats, one model call per agent run
    tokenizer = _tokenizer(tiny_model_path)
    for exp in exps:
        prompt = tokenizer.decode(exp.tokens[: exp.prompt_length].tolist())
        question = next(q for q in questions if f"user\n{q}<|im_end|>" in prompt)
        assert "Answer in one word." in prompt  # the agent's system prompt
        reply = tokenizer.decode(exp.tokens[exp.prompt_length :].tolist(), skip_special_tokens=True)
        matches = [s for s in said[question] if s.strip() == reply.strip()]
        assert matches, (reply, said[question])  # what the agent got back is what was trained
        assert exp.reward in {float(len(s) % 2 == 0) for s in matches}
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


def _tokenizer(model_path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(model_path))


MOCK_POLICY = {
    "adapter.yaml": {
        r"<\|im_start\|>tool\n(-?\d+)": '<tool_call>{"name": "GenerateStructuredOutput", '
        '"arguments": {"answer": "\\1"}}</tool_call>',
        r"What is (\d+) ([-+*]) (\d+)\?": '<tool_call>{"name": "calculate", "arguments": '
        '{"expression": "\\1 \\2 \\3"}}</tool_call>',
    },
    "react_math.yaml": {
        r"<\|im_start\|>tool\n(-?\d+)": '<tool_call>{"name": "GenerateStructuredOutput", '
        r'"arguments": {"result": "\\\\boxed{\1}"}}</tool_call>',
        r"What is (\d+) ([-+*]) (\d+)\?": '<tool_call>{"name": "execute_python_code", '
        '"arguments": {"code": "print(\\1 \\2 \\3)"}}</tool_call>',
    },
    "search.yaml": {
        # the judge shares the policy: its prompt names the response and the answer
        r"\[response\]: (\w+)\s+\[correct_answer\]: \1\b": "Correctness: YES",
        r"<\|im_start\|>tool\n\[\w+\] (\w+) is the capital": '<tool_call>{"name": '
        '"GenerateStructuredOutput", "arguments": {"result": "\\1"}}</tool_call>',
        r"capital of (\w+)\?": '<tool_call>{"name": "search", "arguments": '
        '{"query": "capital of \\1"}}</tool_call>',
    },
}
MOCK_POLICY["adapter_v1.yaml"] = MOCK_POLICY["adapter.yaml"]


@pytest.mark.parametrize("name", sorted(MOCK_POLICY))
def test_the_example_configs_explore_with_a_scripted_policy(tmp_path: Path, name: str) -> None:
    """Each examples/agentscope config as shipped (plugin, taskset, workflow_args), the
    model swapped for a mock policy scripted to use the tools right: every run is
    rewarded 1."""
    config = yaml_with_mock(EXAMPLE / name, MOCK_POLICY[name], tmp_path)
    run_dir = tmp_path / "run"
    overrides = [
        "buffer.total_steps=1", "buffer.batch_size=2",
        "buffer.explorer_input.taskset.repeat_times=2", "monitor.progress=false",
    ]  # fmt: skip
    args = ["explore", "-c", str(config), "--run-dir", str(run_dir)]
    for item in overrides:
        args += ["--set", item]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps, records = storage.read(), storage.task_results()
    finally:
        storage.close()
    assert records and all(r.status == "ok" for r in records), [r.error for r in records]
    assert len(exps) == 2 * 2 * 2 and all(e.reward == 1.0 for e in exps)


def yaml_with_mock(path: Path, replies: dict[str, str], tmp_path: Path) -> Path:
    """A copy of the example config in ``tmp_path`` (its relative paths made absolute),
    its model the scripted mock engine."""
    import yaml

    config = yaml.safe_load(path.read_text())
    config["model"].update(
        {
            "engine": "mock",
            "model_path": "mock",
            "max_model_len": 8192,
            "max_response_tokens": 200,  # the mock's tokens are bytes
            "mock": {"replies": replies},
        }
    )
    config["plugins"] = [str(path.parent / p) for p in config.get("plugins", [])]
    taskset = config["buffer"]["explorer_input"]["taskset"]
    taskset["path"] = str((path.parent / taskset["path"]).resolve())
    copy = tmp_path / path.name
    copy.write_text(yaml.safe_dump(config, sort_keys=False))
    return copy


REACT_WORKFLOWS = [
    "agentscope_react_workflow",
    "agentscope_react_math_workflow",
    "agentscopev0_react_math_workflow",
]


@pytest.mark.parametrize("workflow", REACT_WORKFLOWS)
def test_the_react_workflows_train_two_steps_on_the_tiny_model(
    tmp_path: Path, workflow: str, tiny_model_path, varying_reward, assert_run_trained
) -> None:
    """examples/agentscope/react_math.yaml with each ReAct workflow of the family, on the
    tiny random model: 2 GRPO steps through `reinforge run`, every agent model call a
    stored experience whose prompt holds the task's question, trained on-policy, and
    the weights moved. The tiny model never answers right (the workflow's reward is 0
    everywhere), so the experiences are scored by ``sampled_token_reward`` instead
    (tests/examples/sampled_token_reward.py): groups with reward variance, hence
    nonzero advantages for the steps to train on."""
    source = EXAMPLE / "react_math.yaml"
    config = tmp_path / "react.yaml"
    text = source.read_text().replace("../arithmetic/", str(EXAMPLE.parent / "arithmetic") + "/")
    config.write_text(text.replace("agentscope_react_math_workflow", workflow))
    run_dir = tmp_path / "run"
    overrides = [
        "model.model_path=tiny-random-smollm2", "model.max_response_tokens=8",
        "buffer.total_steps=2", "buffer.batch_size=2",
        "buffer.explorer_input.taskset.repeat_times=2", "trainer.lr=1.0e-3", *varying_reward,
        "monitor.progress=false", "monitor.tensorboard=false", "monitor.plot=false",
    ]  # fmt: skip
    args = ["run", "-c", str(config), "--run-dir", str(run_dir)]
    for item in overrides:
        args += ["--set", item]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        exps, records = storage.read(), storage.task_results()
    finally:
        storage.close()
    assert records and all(r.status == "ok" for r in records), [r.error for r in records]
    assert len(exps) >= 2 * 2 * 2  # at least one model call per agent run
    tokenizer = _tokenizer(tiny_model_path)
    rows = (EXAMPLE.parent / "arithmetic" / "data" / "train.jsonl").read_text().splitlines()
    questions = {json.loads(line)["question"] for line in rows}
    for exp in exps:
        prompt = tokenizer.decode(exp.tokens[: exp.prompt_length].tolist())
        assert any(q in prompt for q in questions), prompt[-300:]
        assert exp.info["original_reward"] == 0.0  # what the workflow gave the tiny model
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "train/loss" in r]
    assert [r["step"] for r in trained] == [1, 2]
    assert all(abs(r["train/sampler/ratio_mean"] - 1) < 0.01 for r in trained), trained
    assert_run_trained(run_dir, tiny_model_path, 2)
