"""Fixtures for the viewer tests: a small real run made with the mock engine (about a second),
and the ``browser`` marker.

In the run, a plugin workflow plays a two-turn calculator agent through the in-process OpenAI
client (history on): the policy first calls the ``calculate`` tool, the workflow
answers with the tool result, the policy then gives its boxed answer. So every
stored experience is multi-turn with a tool call, a tool result and masked tokens.
Task 5 ("boom") always raises, so its records are failed with a traceback; task 6
masks all its experiences, so its records are masked. ``group_advantage`` stores
advantages. 8 tasks, 4 per step, 2 epochs: steps 1 and 3 hold tasks 0-3, steps 2
and 4 tasks 4-7; eval passes at steps 0, 2 and 4.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from reinforge.cli.main import app

AGENT = '''
import json

from reinforge import Workflow
from reinforge.workflows import WORKFLOWS

TOOLS = [{"type": "function", "function": {
    "name": "calculate", "description": "Add two integers written as 'a + b'",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}}}}]


@WORKFLOWS.register_module("viewer_test_calc_agent")
class CalcAgent(Workflow):
    can_repeat = True

    def run(self):
        question = self.task.raw_task["question"]
        if "boom" in question:
            raise RuntimeError("the calculator exploded on purpose")
        batch = self.task.batch_id
        experiences = []
        for i in range(self.repeat_times):
            seed = i + (100 * batch if isinstance(batch, int) else 0)
            reward = self.converse(question, seed)
            for exp in self.model.extract_experience_from_history(shape="conversation"):
                exp.eid.run = self.run_id_base + i
                exp.reward = reward
                exp.metrics["accuracy"] = reward
                exp.info["termination_reason"] = "answered" if reward else "wrong_answer"
                if "mask me" in question:
                    exp.mask("judge_error: the judge gave no verdict")
                experiences.append(exp)
        return experiences

    def converse(self, question, seed):
        """Two turns: a tool call, then the answer after the tool result; the reward."""
        client = self.model.get_openai_client()
        messages = [{"role": "system", "content": "Use the calculator."},
                    {"role": "user", "content": question}]
        first = client.chat.completions.create(
            model=client.model_path, messages=messages, tools=TOOLS)
        reply = first.choices[0].message.model_dump(exclude_none=True)
        messages.append(reply)
        for call in reply.get("tool_calls") or []:
            expression = json.loads(call["function"]["arguments"])["expression"]
            total = sum(int(part) for part in expression.split("+"))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": str(total)})
        final = client.chat.completions.create(
            model=client.model_path, messages=messages, tools=TOOLS, seed=seed)
        return float(str(self.task.raw_task["answer"]) in (final.choices[0].message.content or ""))
'''

CONFIG = r"""
project: viewer
name: calc-agent
mode: explore
plugins: [agent.py]
model:
  engine: mock
  mock:
    policy: arithmetic
    error_rate: 0.4
    replies:
      'What is (\d+ \+ \d+)\?( mask me)?<\|im_end\|>\n<\|im_start\|>assistant\n$': '<tool_call>[{"name": "calculate", "arguments": {"expression": "\1"}}]</tool_call>'
buffer:
  batch_size: 4
  total_epochs: 2
  explorer_input:
    taskset:
      name: calc
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 3
      default_workflow_type: viewer_test_calc_agent
    eval_tasksets:
      - name: calc-eval
        path: tasks.jsonl
        format: {prompt_key: question, response_key: answer}
        repeat_times: 2
        default_workflow_type: viewer_test_calc_agent
  experience_pipeline:
    operators:
      - name: group_advantage
explorer:
  eval_interval: 2
  rollout_model:
    enable_history: true
monitor: {progress: false, tensorboard: false, plot: false}
"""

FAILING_TASK = "5"
MASKED_TASK = "6"
FIRST_PROMPT = "What is 2 + 1?"  # task 0


def question(i: int) -> str:
    if str(i) == FAILING_TASK:
        return "What is boom?"
    text = f"What is {i + 2} + {3 * i + 1}?"
    return text + " mask me" if str(i) == MASKED_TASK else text


def make_run(project: Path) -> Path:
    """Write the project files, run ``reinforge run`` in this process; return the run dir."""
    project.mkdir(parents=True, exist_ok=True)
    with open(project / "tasks.jsonl", "w", encoding="utf-8") as fh:
        for i in range(8):
            fh.write(json.dumps({"question": question(i), "answer": str(4 * i + 3)}) + "\n")
    (project / "agent.py").write_text(AGENT)
    (project / "cfg.yaml").write_text(CONFIG)
    run_dir = project / "run"
    result: Result = CliRunner().invoke(
        app, ["run", "-c", str(project / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    return run_dir


@dataclass(frozen=True)
class SampleRun:
    """The run directory and what the tests know about its content."""

    run_dir: Path
    failing_task: str = FAILING_TASK
    masked_task: str = MASKED_TASK
    first_prompt: str = FIRST_PROMPT
    groups_per_step: int = 4
    repeat_times: int = 3


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives Debian's chromium with Playwright (viewer page tests)"
    )


@pytest.fixture(scope="session")
def sample_run(tmp_path_factory: pytest.TempPathFactory) -> SampleRun:
    """One run shared by the viewer tests (they only read it)."""
    return SampleRun(make_run(tmp_path_factory.mktemp("viewer") / "project"))
