"""The WebShop workflows: ``webshop_workflow`` (one experience per episode, Trinity-RFT's
``WebShopWorkflow``) and ``step_wise_webshop_workflow`` (one experience per step).

The agent is told the format (think in ``<think>``, act in ``<action>``), sees each
page as ``Observation: ...`` with the valid actions under it, and has
``max_env_steps`` actions to buy something. The reward comes at the end: the
purchase's WebShop reward, or ``unfinished_reward`` (-0.1) when it never clicked
Buy Now. An action that is not on the page is answered with the valid ones and
costs a step. Every experience records ``info["termination_reason"]``
(``env_done``, ``max_turns_exceeded`` or ``max_prompt_length_exceeded``).

Both talk to the policy through its OpenAI client and read the turns back from the
rollout model's history, so the tokens trained on are the tokens sampled; they need
``explorer.rollout_model.enable_history: true``. A bad goal (an unknown product, a
goal number the catalogue lacks) or an environment that raises or does not answer
within ``env_timeout`` fails the task with the reason; the environment is closed
either way. Settings: ``settings.py``.
"""

from __future__ import annotations

from typing import Any

from reinforge.envs.session_workflow import (
    EpisodeSessionWorkflow,
    StepWiseSessionWorkflow,
)
from reinforge.envs.webshop.session import WebShopSession
from reinforge.envs.webshop.settings import WebShopSettings
from reinforge.workflows.workflow import WORKFLOWS


@WORKFLOWS.register_module("webshop_workflow")
class WebShopWorkflow(EpisodeSessionWorkflow):
    """One WebShop episode per run, as one token-exact multi-turn experience."""

    settings_type = WebShopSettings
    session_type = WebShopSession


@WORKFLOWS.register_module("step_wise_webshop_workflow")
class StepWiseWebShopWorkflow(StepWiseSessionWorkflow):
    """WebShop with one experience per step, each rewarded with the episode's outcome
    and marked with the hash of the page it acted on (``info["state_hash"]``); train
    it with ``multi_step_grpo`` or ``gigpo``."""

    settings_type = WebShopSettings
    session_type = WebShopSession

    def state_of(self, session: Any) -> str:
        return session.observation
