"""RAFT on ALFWorld (Trinity-RFT's ``RAFTAlfworldWorkflow`` and
``RAFTReflectAlfworldWorkflow``): keep the good trajectories, train on them with the
SFT loss (``trainer.algorithm: sft``).

Replies use the three-part format (``<experience>``, ``<think>``, ``<action>``); an
episode stops when the last three commands are the same (``repeated_action``), or
after ``max_env_steps`` (50). The reward is the game's: 1 when won, else 0.

* ``RAFT_alfworld_workflow``: one attempt. It is kept when it won and every reply
  was well-formed.
* ``RAFT_reflect_alfworld_workflow``: as above when the first attempt won. When it
  failed, the model sees that attempt with feedback on it (``prompts.reflection_message``)
  and plays the game again; the second attempt is kept when every reply is
  well-formed and it improved (a higher reward, or a win in fewer steps). What is
  kept is the second attempt alone, its own conversation as if it were a first try
  (``trajectory.splice``: template text around the replies' sampled tokens).

A run whose trajectory is not kept still returns its experience, with
``info["raft_kept"]`` false and an all-zero ``action_mask``: it trains nothing (the
trainer skips it), and its metrics still count. Evaluation tasks play once and are
never masked. Both need ``explorer.rollout_model.enable_history: true``.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from reinforge.core import Experience, Task
from reinforge.envs.alfworld.prompts import reflection_message
from reinforge.envs.alfworld.session import AlfworldSession
from reinforge.envs.alfworld.settings import AlfworldSettings
from reinforge.envs.alfworld.trajectory import SpliceError, splice
from reinforge.envs.session_workflow import EpisodeSessionWorkflow
from reinforge.workflows.workflow import WORKFLOWS

log = logging.getLogger(__name__)

RAFT_DEFAULTS = {"max_env_steps": 50, "repeat_limit": 3, "unfinished_reward": 0.0}


def _drop(exp: Experience) -> Experience:
    """The experience, kept for its metrics but with nothing to train on."""
    if exp.action_mask is not None:
        exp.action_mask = torch.zeros_like(torch.as_tensor(exp.action_mask), dtype=torch.bool)
    return exp


@WORKFLOWS.register_module("RAFT_alfworld_workflow")
class RAFTAlfworldWorkflow(EpisodeSessionWorkflow):
    """One attempt; kept for SFT when it won with well-formed replies (module docstring)."""

    def reset(self, task: Task) -> None:
        self.task = task
        self.settings = AlfworldSettings.from_task(task, **RAFT_DEFAULTS)

    async def _attempt(self, context: list[dict[str, Any]] | None = None) -> AlfworldSession:
        session = AlfworldSession(
            self.settings,
            self.model,
            self.client,
            self.task.rollout_args,
            style="raft",
            context=context,
        )
        try:
            await session.open()
            while await session.act():
                pass
        finally:
            await session.close()
        return session

    def _finish(
        self, exps: list[Experience], session: AlfworldSession, kept: bool, **extra: float
    ) -> list[Experience]:
        for i, exp in enumerate(exps):
            exp.eid.step = i
            exp.reward = session.env_reward if session.done else 0.0
            exp.info.update(session.info())
            exp.info["raft_kept"] = kept
            exp.metrics.update(session.metrics())
            exp.metrics["raft_kept"] = float(kept)
            exp.metrics.update(extra)
            if not kept and not self.task.is_eval:
                _drop(exp)
        return exps

    async def run_async(self) -> list[Experience]:
        self.model.extract_experience_from_history()  # start from a clean history
        session = await self._attempt()
        exps = self.model.extract_experience_from_history(shape="conversation")
        kept = session.won and session.well_formed
        return self._finish(exps, session, kept)


@WORKFLOWS.register_module("RAFT_reflect_alfworld_workflow")
class RAFTReflectAlfworldWorkflow(RAFTAlfworldWorkflow):
    """A failed attempt is retried with the attempt and feedback in view; the clean retry
    is kept when it improved (module docstring)."""

    async def run_async(self) -> list[Experience]:
        self.model.extract_experience_from_history()
        first = await self._attempt()
        first_exps = self.model.extract_experience_from_history(shape="conversation")
        if self.task.is_eval or first.won:
            return self._finish(first_exps, first, first.won and first.well_formed)
        feedback = reflection_message(
            first.env_reward, first.steps, first.won, int(self.settings.max_env_steps)
        )
        context = [*first.clean, {"role": "user", "content": feedback}]
        second = await self._attempt(context)
        self.model.extract_experience_from_history()  # its turns are in second.turns
        improved = second.env_reward > first.env_reward or (
            second.won and second.steps < first.steps
        )
        kept = second.well_formed and improved
        if not second.turns:  # the retry never got to reply (its prompt did not fit)
            return self._finish(first_exps, first, False, improved=0.0)
        try:
            exp = splice(self.model, second.clean, second.turns)
        except SpliceError as err:
            log.warning("retokenizing the RAFT retry of %s: %s", self.settings.label, err)
            exp = await self.model.convert_messages_to_experience_async(second.clean)
        extra = {
            "first_reward": first.env_reward,
            "first_steps": float(first.steps),
            "second_reward": second.env_reward,
            "second_steps": float(second.steps),
            "improved": float(improved),
        }
        return self._finish([exp], second, kept, **extra)
