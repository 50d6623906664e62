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

from reinforge.envs.alfworld.session import AlfworldSession
from reinforge.envs.alfworld.settings import AlfworldSettings
from reinforge.envs.session_workflow import (
    EpisodeSessionWorkflow,
    StepWiseSessionWorkflow,
)
from reinforge.workflows.workflow import WORKFLOWS


@WORKFLOWS.register_module("alfworld_workflow")
class AlfworldWorkflow(EpisodeSessionWorkflow):
    """One ALFWorld episode per run, as one token-exact multi-turn experience."""

    settings_type = AlfworldSettings
    session_type = AlfworldSession


@WORKFLOWS.register_module("step_wise_alfworld_workflow")
class StepWiseAlfworldWorkflow(StepWiseSessionWorkflow):
    """ALFWorld with one experience per step, each rewarded with the episode's outcome and
    marked with the hash of the state it acted in (``info["state_hash"]``: the last
    observation that changed something, with the admissible commands); train it with
    ``multi_step_grpo`` or ``gigpo``."""

    settings_type = AlfworldSettings
    session_type = AlfworldSession

    def state_of(self, session: Any) -> str:
        return session.state_text
