"""One ALFWorld episode: the game, the environment, the conversation and the agent's steps.

Every ALFWorld workflow drives its episodes through this class: ``open()`` loads the
game and builds the environment, ``act()`` asks the policy for one reply through its
OpenAI client (so the rollout model's history records every turn token-exactly),
takes the command it names and shows the answer; ``close()`` closes the environment.

Every call into the environment runs on a worker thread under ``env_timeout``. An
unknown game, a game the engine cannot load, or an environment that raises or does
not answer fails the task with ``AlfworldEnvError`` saying which and why
(``termination: error``); the workflows close the environment in every case.

A reflecting retry (``RAFT_reflect_alfworld_workflow``) passes ``context``: the
messages of the first attempt and what it is told about them. They are sent before
this attempt's own conversation, while ``clean`` holds this attempt alone (its own
system prompt, observations and replies): the trajectory kept for training.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reinforge.core import Experience, TerminationReason
from reinforge.envs.alfworld.env import AlfworldEnv, make_env
from reinforge.envs.alfworld.games import AlfworldGameError, game_file, shipped_game
from reinforge.envs.alfworld.prompts import (
    NOTHING_HAPPENS,
    observation_message,
    parse_action,
    parse_raft,
    system_prompt,
    well_formed,
)
from reinforge.envs.alfworld.settings import AlfworldSettings
from reinforge.envs.env_call import call_env, close_env
from reinforge.workflows.multi_turn import context_full

#: ``info["termination_reason"]`` of an episode stopped for repeating one command
REPEATED_ACTION = "repeated_action"


class AlfworldEnvError(RuntimeError):
    """The game or the environment failed; the task fails with this message."""


class AlfworldSession:
    """One episode (see the module docstring). ``reason`` is set once it has ended."""

    def __init__(
        self,
        settings: AlfworldSettings,
        model: Any,
        client: Any,
        rollout_args: Any,
        style: str = "think",
        context: list[dict[str, Any]] | None = None,
    ) -> None:
        self.settings = settings
        self.model = model
        self.client = client
        self.rollout_args = rollout_args
        self.style = style
        self.context = list(context or [])
        self.env: AlfworldEnv | None = None
        self.clean: list[dict[str, Any]] = []  # this attempt's own conversation
        self.replies: list[str] = []
        self.turns: list[Experience] = []  # the recorded turn of each reply
        self.actions: list[str] = []
        self.observation = ""
        self.admissible: list[str] = []
        self.state_text = ""  # the last state the agent changed to, for state hashes
        self.steps = 0
        self.invalid = 0
        self.done = False
        self.env_reward = 0.0
        self.reason: TerminationReason | str | None = None

    # ---- the environment, guarded ------------------------------------------------------

    async def _env(self, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        return await call_env(
            AlfworldEnvError, "ALFWorld", what, float(self.settings.env_timeout),
            f"game {self.settings.label}; ", fn, *args, complete=(AlfworldGameError,),
        )  # fmt: skip

    def _game(self) -> dict[str, Any]:
        s = self.settings
        return shipped_game(s.game) if s.game is not None else game_file(str(s.game_file))

    def _build(self) -> AlfworldEnv:
        return make_env(self.settings.env, self._game(), **dict(self.settings.env_args))

    async def open(self) -> None:
        self.env = await self._env("loading the game", self._build)
        observation, info = await self._env("reset", self.env.reset)
        self._see(observation, info)
        s = self.settings
        steps = int(s.max_env_steps)
        prompt = s.system_prompt.replace("{max_steps}", str(steps)) if s.system_prompt else None
        first = {"role": "user", "content": self._message()}
        self.clean = [
            {"role": "system", "content": prompt or system_prompt(self.style, steps)},
            first,
        ]

    async def close(self) -> None:
        """Close the environment; a failure here is logged, never raised over the episode's."""
        if self.env is None:
            return
        env, self.env = self.env, None
        await close_env(env, self._env, AlfworldEnvError)

    def _see(self, observation: str, info: dict[str, Any]) -> None:
        self.observation = str(observation)
        self.admissible = list(info.get("admissible_commands") or [])
        if NOTHING_HAPPENS not in self.observation or not self.state_text:
            self.state_text = self.observation + "\n" + "|".join(self.admissible)

    def _message(self) -> str:
        shown = self.admissible if self.settings.show_admissible_commands else None
        return observation_message(self.observation, shown)

    @property
    def messages(self) -> list[dict[str, Any]]:
        """What the model is sent: the retry's context (if any), then this attempt."""
        if not self.context:
            return self.clean
        *before, last = self.context
        first = self.clean[1]
        if last.get("role") == "user" and first.get("role") == "user":  # one user turn
            joined = {"role": "user", "content": f"{last['content']}\n\n{first['content']}"}
            return [*before, joined, *self.clean[2:]]
        return [*self.context, *self.clean[1:]]

    def _prompt_too_long(self) -> bool:
        """Whether the first prompt of a retry (the whole first attempt) leaves no room."""
        limit = getattr(getattr(self.model, "engine", None), "max_model_len", None)
        if limit is None:
            return False
        reply = self.rollout_args.max_tokens or getattr(self.model, "default_max_tokens", 256)
        prompt = self.model.tokenizer.encode(self.model.chat_prompts.render_text(self.messages))
        return len(prompt) + reply > limit

    # ---- the agent ---------------------------------------------------------------------

    async def _reply(self) -> str:
        args = self.rollout_args
        last = self.turns[-1] if self.turns else None
        full = context_full(self.model, last, args.max_tokens, self.clean[-1]["content"])
        if full or (last is None and self.context and self._prompt_too_long()):
            self.reason = TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED
            return ""
        response = await self.client.chat.completions.create(
            model=self.client.model_path,
            messages=self.messages,
            temperature=args.temperature,
            top_p=args.top_p,
            max_tokens=args.max_tokens,
        )
        # the turn just recorded (read before a step-wise workflow takes the history)
        turns = self.model.extract_experience_from_history(clear_history=False, shape="turn")
        if turns:
            self.turns.append(turns[-1])
        return response.choices[0].message.content or ""

    def _repeating(self) -> bool:
        limit = int(self.settings.repeat_limit)
        recent = self.actions[-limit:] if limit > 0 else []
        return limit > 0 and len(recent) == limit and len(set(recent)) == 1

    async def act(self) -> bool:
        """One step: reply, act, observe. False once the episode has ended."""
        assert self.env is not None
        if self.steps >= int(self.settings.max_env_steps):
            self.reason = TerminationReason.MAX_TURNS_EXCEEDED
            return False
        reply = await self._reply()
        if self.reason is not None:  # no room for another turn
            return False
        self.clean.append({"role": "assistant", "content": reply})
        self.replies.append(reply)
        self.steps += 1
        action = parse_raft(reply)["action"] if self.style == "raft" else parse_action(reply)
        self.actions.append(action)
        if self._repeating():
            self.reason = REPEATED_ACTION
            return False
        observation, reward, done, info = await self._env("step", self.env.step, action)
        self._see(observation, info)
        if NOTHING_HAPPENS in self.observation:
            self.invalid += 1
        if done:
            self.done, self.env_reward = True, float(reward or 0.0)
            self.reason = TerminationReason.ENV_DONE
            return False
        if self.steps >= int(self.settings.max_env_steps):
            self.reason = TerminationReason.MAX_TURNS_EXCEEDED
            return False
        self.clean.append({"role": "user", "content": self._message()})
        return True

    # ---- the outcome -------------------------------------------------------------------

    @property
    def won(self) -> bool:
        return self.done and self.env_reward >= 1.0

    @property
    def reward(self) -> float:
        """1 when won, else ``unfinished_reward``."""
        return 1.0 if self.won else float(self.settings.unfinished_reward)

    @property
    def well_formed(self) -> bool:
        """Whether every reply has every part the format asks for."""
        return bool(self.replies) and all(well_formed(r, self.style) for r in self.replies)

    @property
    def reason_text(self) -> str:
        reason = self.reason or TerminationReason.UNKNOWN
        return reason.value if isinstance(reason, TerminationReason) else str(reason)

    def info(self) -> dict[str, Any]:
        return {
            "termination_reason": self.reason_text,
            "game": self.settings.label,
            "env_steps": self.steps,
            "invalid_actions": self.invalid,
        }

    def metrics(self) -> dict[str, float]:
        steps = max(self.steps, 1)
        return {
            "success": float(self.won),
            "env_done": float(self.done),
            "env_reward": self.env_reward,
            "env_steps": float(self.steps),
            "invalid_actions": float(self.invalid),
            "invalid_action_ratio": self.invalid / steps,
            "well_formed": float(self.well_formed),
            "repeated_action": float(self.reason == REPEATED_ACTION),
            "context_full": float(self.reason == TerminationReason.MAX_PROMPT_LENGTH_EXCEEDED),
        }
