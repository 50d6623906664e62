"""``black_box_agent_workflow``: agents run as programs against a recording endpoint.

The agent is the example's ``agent.py`` (plain OpenAI SDK, in a subprocess) or a
small script written here; the policy is the mock engine's arithmetic policy, so
rewards are known. A failing, silent or hung agent fails its task with the reason
and the run goes on.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.models.tokenizer import ByteTokenizer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "black_box_agent"

CONFIG = """
project: bb
name: t
model:
  model_path: mock
  engine: mock
  mock: {{policy: arithmetic}}
buffer:
  batch_size: 4
  total_steps: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {{prompt_key: question, response_key: answer}}
      repeat_times: 2
      default_workflow_type: black_box_agent_workflow
      default_reward_fn_type: accuracy_reward
      workflow_args: {workflow_args}
explorer:
  runner_concurrency: 4
  max_timeout: 60
  max_retry_times: 0
  eval_on_start: false
  rollout_model: {{enable_history: true}}
monitor: {{progress: false, tensorboard: false, plot: false}}
"""

TASKS = [
    ("What is 2 + 3?", 5),
    ("What is 7 * 6?", 42),
    ("What is 9 - 4?", 5),
    ("What is 1 + 1?", 2),
]


def explore(tmp_path: Path, workflow_args: dict) -> tuple[int, str, SQLiteExperienceStorage]:
    (tmp_path / "cfg.yaml").write_text(CONFIG.format(workflow_args=json.dumps(workflow_args)))
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for question, answer in TASKS:
            fh.write(json.dumps({"question": question, "answer": answer}) + "\n")
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    return result.exit_code, result.output, SQLiteExperienceStorage(run_dir / "buffer.db")


def test_the_example_agent_is_recorded_and_scored(tmp_path: Path) -> None:
    code, output, storage = explore(
        tmp_path, {"command": [sys.executable, str(EXAMPLE / "agent.py")]}
    )
    assert code == 0, output
    exps = storage.read()
    assert len(exps) == len(TASKS) * 2  # one conversation per rollout
    for exp in exps:
        assert exp.reward == 1.0, exp.info  # the arithmetic policy is right
        text = ByteTokenizer().decode(exp.tokens[exp.prompt_length :].tolist())
        assert text.count("\\boxed{") == 2  # both replies, in one experience
        assert "Check your answer" in text  # the user turn between them, masked out
        assert 0 < int(exp.action_mask.sum()) < len(exp.action_mask)
        assert exp.info["agent_answer"].startswith("The answer is \\boxed{")
        assert exp.metrics["agent_calls"] == 1.0
    assert sorted(e.eid.run for e in exps if e.eid.task == exps[0].eid.task) == [0, 1]


AGENTS = {
    "crashes": "import sys; sys.stderr.write('agent exploded on purpose'); sys.exit(3)",
    "silent": "print('42')",
    "hangs": "import time; time.sleep(600)",
}


def test_a_failing_silent_or_hung_agent_fails_its_task_with_the_reason(tmp_path: Path) -> None:
    for name, source in AGENTS.items():
        (tmp_path / f"{name}.py").write_text(source)
    reasons = {}
    for name in AGENTS:
        folder = tmp_path / name
        folder.mkdir()
        args = {"command": f"{{python}} {tmp_path / f'{name}.py'}", "timeout": 2}
        code, output, storage = explore(folder, args)
        assert code == 0, output  # the run goes on and ends
        assert storage.count() == 0
        records = storage.task_results()
        assert records and all(r.status == "failed" for r in records)
        reasons[name] = records[0].error
    assert "exited 3" in reasons["crashes"] and "exploded on purpose" in reasons["crashes"]
    assert "made no model call" in reasons["silent"]
    assert "ran past 2 s" in reasons["hangs"]


def test_a_missing_command_names_the_task(tmp_path: Path) -> None:
    code, output, storage = explore(tmp_path, {})
    assert code == 0, output
    records = storage.task_results()
    assert records and "needs the agent's command" in records[0].error
