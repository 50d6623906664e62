"""The ALFWorld workflows trained with RL: ``alfworld_workflow`` (one experience per
episode, Trinity-RFT's ``AlfworldWorkflow``) and ``step_wise_alfworld_workflow`` (one
experience per step, Trinity-RFT's ``StepWiseAlfworldWorkflow``).

The agent reads each observation (``Observation: ...``), reasons in ``<think>`` and
gives one command in ``<action>``; it has ``max_env_steps`` commands to reach the
goal. The reward comes at the end: 1 when the game is won, ``unfinished_reward``
(-0.1) otherwise. Every experience records ``info["termination_reason"]``
(``env_done``, ``max_turns_exceeded``, ``max_prompt_length_exceeded``).

Both talk to the policy through its OpenAI client and read the turns back from the
rollout model's history (``explorer.rollout_model.enable_history: true``), so the
tokens trained on are the tokens sampled. Settings: ``settings.py``; episodes:
``session.py``.
"""

from __future__ import annotations

from typing import Any

from reinforge.core import Experience, Task
from reinforge.workflows.envs.alfworld.session import AlfworldSession
from reinforge.workflows.envs.alfworld.settings import AlfworldSettings
from reinforge.workflows.step_wise import AsyncRewardPropagationWorkflow, require_history
from reinforge.workflows.workflow import WORKFLOWS, Workflow


@WORKFLOWS.register_module("alfworld_workflow")
class AlfworldWorkflow(Workflow):
    """One ALFWorld episode per run, as one token-exact multi-turn experience."""

    is_async = True
    can_reset = True
    can_repeat = False

    def __init__(self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        require_history(model, type(self).__name__)
        self.client = model.get_openai_async_client()
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        self.settings = AlfworldSettings.from_task(task)

    @property
    def max_env_steps(self) -> int:
        return int(self.settings.max_env_steps)

    async def run_async(self) -> list[Experience]:
        self.model.extract_experience_from_history()  # start from a clean history
        session = AlfworldSession(self.settings, self.model, self.client, self.task.rollout_args)
        try:
            await session.open()
            await session.play()
        finally:
            await session.close()
        exps = self.model.extract_experience_from_history(shape="conversation")
        for i, exp in enumerate(exps):
            exp.eid.step = i
            exp.reward = session.reward
            exp.info.update(session.info())
            exp.info["segments"] = len(exps)
            exp.metrics.update(session.metrics())
        return exps


@WORKFLOWS.register_module("step_wise_alfworld_workflow")
class StepWiseAlfworldWorkflow(AsyncRewardPropagationWorkflow):
    """ALFWorld with one experience per step, each rewarded with the episode's outcome and
    marked with the hash of the state it acted in (``info["state_hash"]``: the last
    observation that changed something, with the admissible commands); train it with
    ``multi_step_grpo`` or ``gigpo``."""

    can_reset = True

    def __init__(
        self,
        *,
        task: Task,
        model: Any,
        auxiliary_models: list[Any] | None = None,
        use_openai_client: bool = True,
    ) -> None:
        if not use_openai_client:
            raise ValueError("step_wise_alfworld_workflow talks to the policy through its client")
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        self.settings = AlfworldSettings.from_task(task)
        self.session: AlfworldSession | None = None

    @property
    def max_step_num(self) -> int:
        return int(self.settings.max_env_steps)

    async def step(self, step_num: int) -> bool:
        assert self.session is not None
        self.mark_state(self.session.state_text)
        return await self.session.act()

    def reward(self, exps: list[Experience]) -> float:
        assert self.session is not None
        return self.session.reward

    def _finish(self, exps: list[Experience], env_steps: int) -> list[Experience]:
        exps = super()._finish(exps, env_steps)
        assert self.session is not None
        for exp in exps:
            exp.info.update(self.session.info())
            exp.metrics.update(self.session.metrics())
        return exps

    async def run_async(self) -> list[Experience]:
        self.session = AlfworldSession(
            self.settings, self.model, self.client, self.task.rollout_args
        )
        try:
            await self.session.open()
            return await self._loop_async()
        finally:
            await self.session.close()
