"""Workflows over an environment *session*: the two shapes the text-environment agents
(ALFWorld, WebShop) share, so that each environment only writes its session.

A session (``AlfworldSession``, ``WebShopSession``) is built from
``(settings, model, client, rollout_args)`` and plays one episode: ``open()``, then
``act()`` until it returns False, then ``close()``; it knows the episode's ``reward``
and gives ``info()`` / ``metrics()`` for its experiences. Both shapes talk to the
policy through its OpenAI client and read the turns back from the rollout model's
history, so the tokens trained on are the tokens sampled
(``explorer.rollout_model.enable_history: true``); the session is closed whatever
happens.

* ``EpisodeSessionWorkflow``: one episode per run, one token-exact multi-turn
  experience (more than one only where the chat template forces a split).
* ``StepWiseSessionWorkflow``: one experience per step, each with the episode's reward
  and the hash of the state it acted in (``info["state_hash"]``, for ``gigpo``).
"""

from __future__ import annotations

from typing import Any, ClassVar

from reinforge.core import Experience, Task
from reinforge.workflows.step_wise import AsyncRewardPropagationWorkflow, require_history
from reinforge.workflows.workflow import Workflow


class EpisodeSessionWorkflow(Workflow):
    """One episode per run as one token-exact multi-turn experience. Subclasses name
    ``settings_type`` (with ``from_task``) and ``session_type``."""

    is_async = True
    can_reset = True
    can_repeat = False
    settings_type: ClassVar[Any]
    session_type: ClassVar[Any]

    def __init__(self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None):
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        require_history(model, type(self).__name__)
        self.client = model.get_openai_async_client()
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        self.settings = self.settings_type.from_task(task)

    @property
    def max_env_steps(self) -> int:
        return int(self.settings.max_env_steps)

    async def run_async(self) -> list[Experience]:
        self.model.extract_experience_from_history()  # start from a clean history
        session = self.session_type(self.settings, self.model, self.client, self.task.rollout_args)
        try:
            await session.open()
            while await session.act():
                pass
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


class StepWiseSessionWorkflow(AsyncRewardPropagationWorkflow):
    """One experience per step, each rewarded with the episode's outcome and marked with
    the hash of ``state_of(session)`` before the step; train it with ``multi_step_grpo``
    or ``gigpo``. Subclasses name ``settings_type`` and ``session_type`` and say what
    the state is."""

    can_reset = True
    settings_type: ClassVar[Any]
    session_type: ClassVar[Any]

    def __init__(
        self,
        *,
        task: Task,
        model: Any,
        auxiliary_models: list[Any] | None = None,
        use_openai_client: bool = True,
    ) -> None:
        if not use_openai_client:
            raise ValueError(f"{type(self).__name__} talks to the policy through its client")
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        self.settings = self.settings_type.from_task(task)
        self.session: Any = None

    def state_of(self, session: Any) -> str:
        """The text whose hash keys the step's state (the environment's own notion)."""
        raise NotImplementedError

    @property
    def max_step_num(self) -> int:
        return int(self.settings.max_env_steps)

    async def step(self, step_num: int) -> bool:
        self.mark_state(self.state_of(self.session))
        return await self.session.act()

    def reward(self, exps: list[Experience]) -> float:
        return self.session.reward

    def _finish(self, exps: list[Experience], env_steps: int) -> list[Experience]:
        exps = super()._finish(exps, env_steps)
        for exp in exps:
            exp.info.update(self.session.info())
            exp.metrics.update(self.session.metrics())
        return exps

    async def run_async(self) -> list[Experience]:
        self.session = self.session_type(
            self.settings, self.model, self.client, self.task.rollout_args
        )
        try:
            await self.session.open()
            return await self._loop_async()
        finally:
            await self.session.close()
