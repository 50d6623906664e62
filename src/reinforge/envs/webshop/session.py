"""One WebShop episode: the environment, the conversation, and the agent's steps.

Both WebShop workflows drive an episode through this class: ``open()`` builds the
environment and shows the start page, each ``act()`` asks the policy for one reply
through its OpenAI client (so the rollout model's history records every turn
token-exactly), checks the action against the page (an invalid one is answered
with the valid ones and costs a step), and takes it; ``close()`` closes the
environment. Every call into the environment runs on a worker thread under
``env_timeout``: one that raises or does not answer fails the task with
``WebShopEnvError`` saying which call and why (termination reason ``error``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reinforge.core import TerminationReason
from reinforge.envs.env_call import call_env, close_env
from reinforge.envs.webshop.env import WebShopEnv, make_env
from reinforge.envs.webshop.prompts import (
    observation_message,
    parse_action,
    system_prompt,
    validate_action,
)
from reinforge.envs.webshop.settings import WebShopSettings
from reinforge.workflows.multi_turn import context_full


class WebShopEnvError(RuntimeError):
    """The environment raised or hung; the task fails with this message."""


class WebShopSession:
    """One episode (see the module docstring). ``reason`` is set once it has ended."""

    def __init__(self, settings: WebShopSettings, model: Any, client: Any, rollout_args: Any):
        self.settings = settings
        self.model = model
        self.client = client
        self.rollout_args = rollout_args
        self.env: WebShopEnv | None = None
        self.messages: list[dict[str, Any]] = []
        self.steps = 0
        self.invalid = 0
        self.done = False
        self.env_reward = 0.0
        self.reason: TerminationReason | None = None
        self.last_turn: Any = None  # the last recorded model call, for the context check
        #: the catalogue env's breakdown of the purchase's reward (None for other envs)
        self.purchase: Any = None

    # ---- the environment, guarded ------------------------------------------------------

    async def _env(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        timeout = float(self.settings.env_timeout)
        return await call_env(WebShopEnvError, "WebShop", what, timeout, "", fn, *args, **kwargs)

    async def open(self) -> None:
        s = self.settings
        self.env = await self._env("make_env", make_env, s.env, **dict(s.env_args))
        await self._env("reset", self.env.reset, session=s.session)
        available = await self._available()
        steps = int(s.max_env_steps)
        prompt = s.system_prompt.replace("{max_steps}", str(steps)) if s.system_prompt else None
        self.messages = [
            {"role": "system", "content": prompt or system_prompt(steps)},
            {"role": "user", "content": observation_message(self.env.observation, available)},
        ]

    async def close(self) -> None:
        """Close the environment; a failure here is logged, never raised over the episode's."""
        if self.env is None:
            return
        env, self.env = self.env, None
        await close_env(env, self._env, WebShopEnvError)

    async def _available(self) -> dict[str, Any] | None:
        assert self.env is not None
        available = await self._env("get_available_actions", self.env.get_available_actions)
        return available if self.settings.show_available_actions else None

    @property
    def observation(self) -> str:
        """The page the agent is on (an invalid action does not change it)."""
        return self.env.observation if self.env is not None else ""

    # ---- the agent ---------------------------------------------------------------------

    def _context_full(self) -> bool:
        pending = self.messages[-1]["content"]
        return context_full(self.model, self.last_turn, self.rollout_args.max_tokens, pending)

    async def _reply(self) -> str:
        args = self.rollout_args
        response = await self.client.chat.completions.create(
            model=self.client.model_path,
            messages=self.messages,
            temperature=args.temperature,
            top_p=args.top_p,
            max_tokens=args.max_tokens,
        )
        # the turn just recorded (read before a step-wise workflow takes the history)
        turns = self.model.extract_experience_from_history(clear_history=False, shape="turn")
        self.last_turn = turns[-1] if turns else self.last_turn
        return response.choices[0].message.content or ""

    async def act(self) -> bool:
        """One step: reply, validate, act. False once the episode has ended."""
        assert self.env is not None
        if self.steps >= int(self.settings.max_env_steps):
            self.reason = TerminationReason.MAX_TURNS_EXCEEDED
            return False
        if self._context_full():
            self.reason = TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED
            return False
        reply = await self._reply()
        self.messages.append({"role": "assistant", "content": reply})
        self.steps += 1
        action = parse_action(reply)
        page = await self._env("get_available_actions", self.env.get_available_actions)
        valid, message = validate_action(action, page)
        if valid:
            observation, reward, done, _ = await self._env("step", self.env.step, action)
        else:
            self.invalid += 1
            observation, reward, done = message, 0.0, False
        if done:
            self.done, self.env_reward = True, float(reward or 0.0)
            self.purchase = getattr(self.env, "last_purchase", None)
            self.reason = TerminationReason.ENV_DONE
            return False
        if self.steps >= int(self.settings.max_env_steps):
            self.reason = TerminationReason.MAX_TURNS_EXCEEDED
            return False
        # an invalid action's message already lists the valid actions
        available = await self._available() if valid else None
        self.messages.append(
            {"role": "user", "content": observation_message(observation, available)}
        )
        return True

    # ---- the outcome -------------------------------------------------------------------

    @property
    def reward(self) -> float:
        """The purchase's reward (made 1/0 with ``sparse_reward``), or ``unfinished_reward``."""
        if not self.done:
            return float(self.settings.unfinished_reward)
        if self.settings.sparse_reward:
            return 1.0 if self.env_reward >= 0.99 else 0.0
        return self.env_reward

    def info(self) -> dict[str, Any]:
        reason = self.reason or TerminationReason.UNKNOWN
        info: dict[str, Any] = {
            "termination_reason": reason.value,
            "session_id": self.settings.session_id,
            "env_steps": self.steps,
            "invalid_actions": self.invalid,
        }
        return info

    def metrics(self) -> dict[str, float]:
        steps = max(self.steps, 1)
        out = {
            "success": float(self.done and self.env_reward >= 0.99),
            "env_done": float(self.done),
            "env_reward": self.env_reward,
            "env_steps": float(self.steps),
            "invalid_actions": float(self.invalid),
            "invalid_action_ratio": self.invalid / steps,
            "context_full": float(self.reason == TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED),
        }
        if self.purchase is not None:
            out.update(self.purchase.metrics())
        return out
