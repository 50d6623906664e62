"""The common part of the built-in AgentScope ReAct workflows: one agent run per
rollout on the policy, the run's model calls as experiences with one reward."""

from __future__ import annotations

from typing import Any

from reinforge.core import Experience, Task
from reinforge.workflows.agentscope.chat_model import policy_chat_model, require_agentscope
from reinforge.workflows.agentscope.react_agent import memory_length, user_message
from reinforge.workflows.step_wise import require_history
from reinforge.workflows.workflow import Workflow


def gsm8k_answer(truth: Any) -> str:
    """The reference answer: the part after ``####`` of a GSM8K solution, else the truth."""
    if isinstance(truth, str) and "####" in truth:
        return truth.split("####")[1].strip()
    return "" if truth is None else str(truth)


class AgentScopeReActBase(Workflow):
    """Holds the task's question and truth, runs an agent, builds the experiences.

    ``workflow_args``: ``max_iters`` (the ReAct loop's limit; each subclass has its
    default) and ``shape`` (``turn``, one experience per model call, the default; or
    ``conversation``).
    """

    is_async = True
    can_reset = True
    can_repeat = False  # one agent run per rollout
    default_max_iters = 10

    def __init__(self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None):
        require_agentscope(type(self).__name__)
        require_history(model, type(self).__name__)
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        self.raw_task = task.raw_task or {}
        self.workflow_args = dict(task.workflow_args or {})
        self.task_desc = task.task_desc
        self.truth = task.truth
        if self.task_desc is None:
            raise ValueError(
                f"task {task.task_id!r}: row has no prompt key "
                f"'{task.format_args.prompt_key}' (keys: {sorted(self.raw_task)})"
            )
        self.max_iters = int(self.workflow_args.get("max_iters", self.default_max_iters))
        self.shape = self.workflow_args.get("shape", "turn")
        self.agent: Any = None

    def chat_model(self) -> Any:
        return policy_chat_model(self.model, self.task.rollout_args)

    async def ask_agent(self, agent: Any, question: str, schema: Any = None) -> Any:
        """The agent's reply to ``question``; an exception inside the agent fails the
        task with the reason."""
        self.agent = agent
        self.model.extract_experience_from_history()  # start from a clean history
        try:
            return await agent.reply(user_message(question), structured_schema=schema)
        except Exception as exc:
            raise RuntimeError(
                f"task {self.task.task_id!r}: the AgentScope agent raised "
                f"{type(exc).__name__}: {exc}"
            ) from exc

    def experiences(self, reward: float, metrics: dict[str, float]) -> list[Experience]:
        """The run's model calls from the history, each with ``reward`` and ``metrics``
        (plus the agent's memory length)."""
        experiences = self.model.extract_experience_from_history(shape=self.shape)
        if not experiences:
            raise RuntimeError(
                f"task {self.task.task_id!r}: the AgentScope agent made no model call"
            )
        metrics = {**metrics, "react_memory_length": float(memory_length(self.agent))}
        for step, exp in enumerate(experiences):
            exp.reward = reward
            exp.eid.step = step
            exp.metrics.update(metrics)
        return experiences
