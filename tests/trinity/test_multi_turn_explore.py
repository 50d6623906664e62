"""A Trinity-RFT multi-turn workflow, imports changed, run by ``reinforge explore``.

The workflow is written the way Trinity's FrozenLake workflow is: ``rollout_args``
from ``asdict(task.rollout_args)``, the model called with ``self.model.chat_async``,
the token budget read with ``get_message_token_len``, the messages assembled by hand
and turned into one experience by ``process_messages_to_experience_async``.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

PLUGIN = """
import re
from dataclasses import asdict
from typing import List, Optional

from reinforge.trinity.common.experience import Experience
from reinforge.trinity.common.models.model import ModelWrapper
from reinforge.trinity.common.workflows.workflow import WORKFLOWS, MultiTurnWorkflow, Task


@WORKFLOWS.register_module("guess_the_number")
class GuessTheNumberWorkflow(MultiTurnWorkflow):
    can_reset: bool = False
    is_async: bool = True
    can_repeat: bool = False

    def __init__(self, model: ModelWrapper, task: Task, auxiliary_models: Optional[List] = None):
        super().__init__(model=model, task=task, auxiliary_models=auxiliary_models)
        workflow_args = task.workflow_args if hasattr(task, "workflow_args") else {}
        self.max_steps = workflow_args.get("max_steps", 3)
        self.max_response_tokens = self.rollout_args.get("max_response_tokens", 10240)
        self.secret = int(task.raw_task["secret"])

    @property
    def rollout_args(self):
        return asdict(self.task.rollout_args)

    async def run_async(self) -> List[Experience]:
        messages = [
            {"role": "system", "content": "Guess the number between 1 and 9."},
            {"role": "user", "content": "Your first guess?"},
        ]
        step_count, solved, truncate_status = 0, False, None
        for step in range(self.max_steps):
            messages_token_len = await self.model.get_message_token_len(messages)
            if step == 0:
                init_prompt_token_len = messages_token_len
            max_tokens = self.max_response_tokens - (messages_token_len - init_prompt_token_len)
            if max_tokens <= 0:
                messages = messages[:-1]
                truncate_status = "response_truncated"
                break
            rollout_args = self.rollout_args.copy()
            rollout_args["n"] = 1
            rollout_args["max_tokens"] = max_tokens
            responses = await self.model.chat_async(messages, **rollout_args)
            response_text = responses[0].response_text
            messages.append({"role": "assistant", "content": response_text})
            step_count += 1
            matches = re.findall(r"```(\\d)```", response_text)
            guess = int(matches[-1]) if matches else 0
            if guess == self.secret:
                solved = True
                break
            hint = "higher" if guess < self.secret else "lower"
            messages.append({"role": "user", "content": f"{guess} is wrong, go {hint}."})
        experience = await self.process_messages_to_experience_async(
            messages=messages,
            reward=1.0 if solved else 0.0,
            info={"env_steps": step_count, "success": 1 if solved else 0},
            truncate_status=truncate_status,
        )
        return [experience]
"""

# the mock policy guesses 5, then follows the hints: 7, then 6 or 8 (first match wins)
CONFIG = """
project: trinity
name: guess
run_dir: run
model:
  engine: mock
  mock:
    default_reply: "My guess: ```5```"
    replies:
      "7 is wrong, go lower": "```6```"
      "7 is wrong, go higher": "```8```"
      "5 is wrong, go higher": "```7```"
buffer:
  batch_size: 4
  total_epochs: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: secret, response_key: null}
      workflow_args: {max_steps: 3}
      repeat_times: 2
      default_workflow_type: guess_the_number
plugins: [guess_the_number.py]
monitor: {progress: false, tensorboard: false, plot: false}
"""

SECRETS = [6, 5, 7, 9]
# what the workflow intends for each secret: (reward, env_steps)
EXPECTED = {6: (1.0, 3.0), 5: (1.0, 1.0), 7: (1.0, 2.0), 9: (0.0, 3.0)}


def test_a_trinity_multi_turn_workflow_explores(tmp_path: Path) -> None:
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for secret in SECRETS:
            fh.write(json.dumps({"secret": secret}) + "\n")
    (tmp_path / "guess_the_number.py").write_text(PLUGIN)
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    storage = SQLiteExperienceStorage(tmp_path / "run" / "buffer.db")
    try:
        exps = storage.read()
    finally:
        storage.close()
    assert len(exps) == len(SECRETS) * 2  # one experience per game, two games per task
    for exp in exps:
        secret = SECRETS[int(exp.eid.task)]
        reward, steps = EXPECTED[secret]
        assert (exp.reward, exp.metrics["env_steps"]) == (reward, steps), secret
        assert exp.metrics["success"] == reward
        assert exp.info["retokenized"] is True and exp.truncate_status is None
        assert exp.response_text.count("```") == 2 * int(steps)
        mask = "".join(str(int(m)) for m in exp.action_mask.tolist())
        assert mask.startswith("1") and mask.count("01") == int(steps) - 1  # hints masked
        assert exp.logprobs[exp.action_mask].lt(0).all()
