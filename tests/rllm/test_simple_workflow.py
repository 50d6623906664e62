"""rLLM's legacy ``SimpleWorkflow`` / ``SimpleAgent`` (``rllm.workflows.simple_workflow``).

Written the way rLLM 0.2/0.3 code uses them: a workflow class handed
``reward_function`` in ``workflow_args`` (rLLM's countdown and hendrycks-math
trainers), subclasses of it, and workflows of one's own that record with
``SimpleAgent`` (rLLM's geo3k workflow). The legacy file below is run through
``reinforge migrate`` (only its imports change) and ``reinforge explore`` on the mock
engine; the rest runs the mirror's classes directly on a ``MockEngine``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.core import Task as ReinforgeTask
from reinforge.core.episode import TerminationReason
from reinforge.models import MockEngine, ModelWrapper
from reinforge.rllm.workflows.simple_workflow import SimpleAgent, SimpleWorkflow
from reinforge.rllm.workflows.workflow import Workflow
from reinforge.workflows import WORKFLOWS

#: a legacy rLLM (0.2-era) plugin: a SimpleWorkflow subclass with a default reward, and a
#: workflow of its own recording its step with SimpleAgent, as rLLM's geo3k one does
LEGACY_PLUGIN = """
from rllm.agents.agent import Action, Episode, Step
from rllm.engine import ModelOutput, RolloutEngine
from rllm.rewards.reward_fn import RewardFunction, math_reward_fn
from rllm.workflows.simple_workflow import SimpleAgent, SimpleWorkflow
from rllm.workflows.workflow import TerminationEvent, TerminationReason, Workflow


class BoxedMathWorkflow(SimpleWorkflow):
    def __init__(self, rollout_engine: RolloutEngine, reward_function: RewardFunction = None, **kwargs):
        super().__init__(rollout_engine, reward_function or math_reward_fn, **kwargs)


class ShowYourWorkWorkflow(Workflow):
    def __init__(self, rollout_engine: RolloutEngine, reward_function: RewardFunction = None, **kwargs):
        super().__init__(rollout_engine, **kwargs)
        self.agent = SimpleAgent()
        self.reward_fn = reward_function or math_reward_fn

    async def run(self, task: dict, uid: str, **kwargs) -> Episode:
        self.reset(task, uid)
        messages = [{"role": "user", "content": "Show your work. " + task["question"]}]
        output: ModelOutput = await self.rollout_engine.get_model_response(messages, application_id=uid, **kwargs)
        action = Action(output.content)
        result = self.reward_fn(task, action)
        self.agent.trajectory.steps.append(
            Step(chat_completions=messages + [{"role": "assistant", "content": output.content}],
                 action=action, reward=result.reward, model_output=output)
        )
        self.commit(agent=self.agent, reset=True)
        raise TerminationEvent(TerminationReason.ENV_DONE)
"""

CONFIG = """
project: rllm
name: legacy-simple-workflow
model:
  engine: mock
  mock: {policy: arithmetic, error_rate: 0.0}
buffer:
  batch_size: 3
  total_epochs: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: ground_truth}
      repeat_times: 2
      default_workflow_type: BoxedMathWorkflow
plugins: [legacywf]
"""


def test_a_legacy_simple_workflow_migrates_and_explores_unchanged(tmp_path: Path) -> None:
    folder = tmp_path / "legacywf"
    folder.mkdir()
    (folder / "workflow.py").write_text(LEGACY_PLUGIN)
    migrated = CliRunner().invoke(app, ["migrate", str(folder)])
    assert migrated.exit_code == 0, migrated.output
    assert "cannot map" not in migrated.output
    text = (folder / "workflow.py").read_text()
    assert (
        "from reinforge.rllm.workflows.simple_workflow import SimpleAgent, SimpleWorkflow" in text
    )
    assert "\nfrom rllm." not in text
    with open(tmp_path / "tasks.jsonl", "w") as fh:
        for i in range(3):  # rLLM's math reward reads ground_truth; task 0's is wrong on purpose
            truth = str(i + 5) if i else "99"
            fh.write(json.dumps({"question": f"What is {i} + 5?", "ground_truth": truth}) + "\n")
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    result = CliRunner().invoke(
        app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(tmp_path / "run")]
    )
    assert result.exit_code == 0, result.output
    storage = SQLiteExperienceStorage(tmp_path / "run" / "buffer.db")
    try:
        exps = list(storage.read())
    finally:
        storage.close()
    assert len(exps) == 3 * 2  # one step per episode, two episodes per task
    assert sorted(e.reward for e in exps) == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]
    for exp in exps:  # the reply the mock sampled, wholly in the action mask
        assert exp.action_mask.sum().item() == exp.tokens.numel() - exp.prompt_length > 0


# ---- the mirror's classes on a MockEngine ----------------------------------------------


def make_task(row: dict[str, Any], *, max_tokens: int = 64, **workflow_args: Any) -> ReinforgeTask:
    return ReinforgeTask(
        workflow=WORKFLOWS.get("reinforge.rllm.workflows.simple_workflow.SimpleWorkflow"),
        raw_task=row,
        format_args=FormatConfig(prompt_key="question", response_key="ground_truth"),
        rollout_args=GenerationConfig(max_tokens=max_tokens),
        workflow_args={
            "reward_function": "reinforge.rllm.rewards.reward_fn.math_reward_fn",
            **workflow_args,
        },
        repeat_times=1,
        task_id="t0",
    )


def run(task: ReinforgeTask, engine: MockEngine) -> tuple[Any, list[Any]]:
    workflow = task.to_workflow(ModelWrapper(engine))
    return workflow, asyncio.run(workflow.run_async())


def test_one_call_scored_by_the_reward_function_ends_the_episode_as_env_done() -> None:
    reply = "<think>2 + 5 is 7</think>The answer is \\boxed{7}."
    engine = MockEngine(replies=[reply])
    workflow, exps = run(make_task({"question": "What is 2 + 5?", "ground_truth": "7"}), engine)

    (episode,) = workflow.episodes
    assert episode.termination_reason is TerminationReason.ENV_DONE
    assert episode.is_correct is True
    (traj,) = episode.trajectories
    (step,) = traj.steps
    assert traj.reward == step.reward == 1.0
    assert step.thought == "2 + 5 is 7"  # the reasoning, split off the reply
    assert step.action.action == "The answer is \\boxed{7}."
    assert step.chat_completions == [
        {"role": "user", "content": "What is 2 + 5?"},
        {"role": "assistant", "content": "The answer is \\boxed{7}.", "reasoning": "2 + 5 is 7"},
    ]
    (exp,) = exps
    assert exp.reward == 1.0
    sampled = exp.tokens[exp.prompt_length :].tolist()
    assert engine.tokenizer.decode(sampled).startswith(reply)  # the ids the engine sampled


def test_the_prompt_comes_from_messages_then_question_prompt_problem() -> None:
    seen: list[str] = []

    def answer(prompt: str, index: int) -> str:
        seen.append(prompt)
        return "\\boxed{1}"

    rows = [
        {"messages": [{"role": "user", "content": "from messages"}], "question": "not this"},
        {"question": "from question", "prompt": "not this"},
        {"prompt": "from prompt", "problem": "not this"},
        {"problem": "from problem"},
    ]
    for row in rows:
        run(make_task({**row, "ground_truth": "1"}), MockEngine(replies=answer))
    assert [p for p in seen if "not this" in p] == []
    for word, prompt in zip(("messages", "question", "prompt", "problem"), seen, strict=True):
        assert f"from {word}" in prompt


def test_a_reply_cut_by_the_length_limit_and_a_row_without_a_prompt() -> None:
    engine = MockEngine(replies=["a long reply that cannot fit in four tokens"])
    workflow, _ = run(make_task({"question": "q", "ground_truth": "1"}, max_tokens=4), engine)
    assert workflow.episodes[0].termination_reason is TerminationReason.MAX_RESPONSE_LENGTH_EXCEEDED

    workflow, _ = run(make_task({"ground_truth": "1"}), MockEngine())
    (episode,) = workflow.episodes
    assert episode.termination_reason is TerminationReason.ERROR
    assert "No question, problem, messages, or prompt key" in str(episode.info["error"])


def test_simple_agent_holds_a_trajectory_and_nothing_else() -> None:
    agent = SimpleAgent(anything="ignored")
    first = agent.trajectory
    assert first.steps == []
    assert agent.update_from_model("reply") is None
    assert agent.update_from_env(observation=None, reward=0.0, done=False, info={}) is None
    first.steps.append(object())
    agent.reset()
    assert agent.trajectory is not first and agent.trajectory.steps == []
    assert issubclass(SimpleWorkflow, Workflow)  # rLLM's episode Workflow
