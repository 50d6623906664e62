"""Episode records of rLLM-style agent workflows: Step → Trajectory → Episode.

An *episode* is one rollout of a task (one ``run_with_termination_handling`` call
of an episode workflow). It holds one or more *trajectories* - one per agent or
role, e.g. a ``solver`` and a ``judge`` - each an ordered list of *steps*; a step
is one model call with what the agent saw before it and what happened after it.
The field names follow rLLM's ``rllm.agents.agent`` so that code written against
those classes keeps working; ``reinforge.workflows.episode`` turns finished
episodes into token-exact ``Experience`` objects.

Plain dataclasses without torch: ``to_dict`` gives JSON-friendly data for storage
and ``from_dict`` reads it back.
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from reinforge.core.model_output import ModelOutput
from reinforge.core.plain import to_plain

DEFAULT_TRAJECTORY_NAME = "default_traj_name"


class TerminationReason(Enum):
    """Why an episode ended. The values are rLLM's, so stored episodes compare equal."""

    MAX_PROMPT_LENGTH_EXCEEDED = "max_prompt_length_exceeded"
    MAX_RESPONSE_LENGTH_EXCEEDED = "max_response_length_exceeded"
    ENV_DONE = "env_done"
    MAX_TURNS_EXCEEDED = "max_turns_exceeded"
    TIMEOUT = "timeout"
    UNKNOWN = "unknown"
    ERROR = "error"

    @classmethod
    def parse(cls, value: TerminationReason | str) -> TerminationReason:
        """A reason from itself, its value (``"timeout"``) or its name (``"TIMEOUT"``)."""
        if isinstance(value, cls):
            return value
        text = str(value).strip()
        for reason in cls:
            if text.lower() in (reason.value, reason.name.lower()):
                return reason
        known = ", ".join(r.value for r in cls)
        raise ValueError(f"unknown termination reason {value!r}; known: {known}")


class TerminationEvent(Exception):
    """Raised inside ``Workflow.run`` to end the episode early with ``reason``.

    ``run_with_termination_handling`` catches it, keeps whatever trajectories exist
    so far and records ``reason`` on the episode.
    """

    def __init__(self, reason: TerminationReason = TerminationReason.UNKNOWN) -> None:
        super().__init__(f"Terminated: {reason}")
        self.reason = reason


@dataclass
class Action:
    """The parsed action an agent hands to its environment (rLLM's ``Action`` wrapper)."""

    action: Any = None


@dataclass
class Step:
    """One model call of a trajectory and its outcome.

    ``prompt_ids`` / ``response_ids`` / ``logprobs`` are the exact tokens of the
    call; when only ``model_output`` is given they are filled from it.
    ``chat_completions`` is the conversation the model saw (deep-copied, so an agent
    that keeps appending to its message list does not change recorded steps).
    ``reward`` is the step reward, ``done`` whether the environment ended after the
    step; ``mc_return`` and ``advantage`` are filled by later processing.
    """

    prompt_ids: list[int] = field(default_factory=list)
    response_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    chat_completions: list[dict[str, Any]] = field(default_factory=list)
    observation: Any = None
    thought: str = ""
    action: Any = None
    model_response: str = ""
    model_output: ModelOutput | None = None
    info: dict[str, Any] = field(default_factory=dict)
    reward: float = 0.0
    done: bool = False
    mc_return: float = 0.0
    advantage: list[float] | float | None = None
    weight_version: int | None = None

    def __post_init__(self) -> None:
        self.chat_completions = copy.deepcopy(self.chat_completions)
        self.info = copy.deepcopy(self.info)
        out = self.model_output
        if out is not None:
            if not self.prompt_ids and out.prompt_ids is not None:
                self.prompt_ids = list(out.prompt_ids)
            if not self.response_ids and out.completion_ids is not None:
                self.response_ids = list(out.completion_ids)
            if not self.logprobs and out.logprobs is not None:
                self.logprobs = list(out.logprobs)
            if self.weight_version is None:
                self.weight_version = out.weight_version
            if not self.model_response and out.content is not None:
                self.model_response = out.content
        if self.logprobs and len(self.logprobs) != len(self.response_ids):
            raise ValueError(
                f"Step has {len(self.logprobs)} logprobs for {len(self.response_ids)} response ids"
            )

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Alias of ``chat_completions`` (the OpenAI message list the model saw)."""
        return self.chat_completions

    @messages.setter
    def messages(self, value: list[dict[str, Any]]) -> None:
        self.chat_completions = value

    @property
    def has_tokens(self) -> bool:
        """Whether this step records a model call that can become an Experience."""
        return bool(self.prompt_ids) and bool(self.response_ids)

    @classmethod
    def from_model_output(
        cls,
        model_output: ModelOutput,
        messages: list[dict[str, Any]] | None = None,
        action: Any = None,
    ) -> Step:
        """A step for ``model_output``, with the reply appended to ``messages``."""
        reply = {"role": "assistant", "content": model_output.content}
        if model_output.reasoning:
            reply["reasoning"] = model_output.reasoning
        return cls(
            chat_completions=[*(messages or []), reply],
            thought=model_output.reasoning or "",
            action=action,
            model_response=model_output.content or "",
            model_output=model_output,
        )

    def to_dict(self) -> dict[str, Any]:
        action = self.action.action if isinstance(self.action, Action) else self.action
        return {
            "prompt_ids": list(self.prompt_ids),
            "response_ids": list(self.response_ids),
            "logprobs": list(self.logprobs),
            "chat_completions": to_plain(self.chat_completions),
            "observation": to_plain(self.observation),
            "thought": self.thought,
            "action": to_plain(action),
            "model_response": self.model_response,
            "model_output": None if self.model_output is None else self.model_output.to_dict(),
            "info": to_plain(self.info),
            "reward": float(self.reward),
            "done": bool(self.done),
            "mc_return": float(self.mc_return),
            "advantage": to_plain(self.advantage),
            "weight_version": self.weight_version,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Step:
        data = dict(data)
        if data.get("model_output") is not None:
            data["model_output"] = ModelOutput.from_dict(data["model_output"])
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class Trajectory:
    """The steps of one agent (or role) in an episode, and its trajectory-level reward.

    ``name`` groups trajectories of the same role across episodes (metrics are
    reported per name); ``reward`` stays ``None`` until the workflow computes it.
    """

    uid: str = field(default_factory=lambda: str(uuid.uuid4()))
    name: str = DEFAULT_TRAJECTORY_NAME
    task: Any = None
    steps: list[Step] = field(default_factory=list)
    reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def is_cumulative(self) -> bool:
        """True if every step's conversation extends the previous step's conversation."""
        previous: list[dict[str, Any]] | None = None
        for step in self.steps:
            current = step.chat_completions
            if previous is not None and current[: len(previous)] != previous:
                return False
            previous = current
        return True

    def to_dict(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "name": self.name,
            "task": to_plain(self.task),
            "steps": [step.to_dict() for step in self.steps],
            "reward": None if self.reward is None else float(self.reward),
            "info": to_plain(self.info),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trajectory:
        return cls(
            uid=data.get("uid") or str(uuid.uuid4()),
            name=data.get("name", DEFAULT_TRAJECTORY_NAME),
            task=data.get("task"),
            steps=[Step.from_dict(s) for s in data.get("steps", [])],
            reward=data.get("reward"),
            info=dict(data.get("info") or {}),
        )


@dataclass
class Episode:
    """One rollout of a task: its trajectories, outcome and why it ended.

    ``id`` is ``"{task_id}:{rollout_index}"`` by convention. ``trajectories`` may
    also be given as ``(name, trajectory)`` pairs or a ``{name: trajectory}`` dict
    (older rLLM code does this); they are stored as a list with the names set.
    """

    id: str = ""
    task: Any = None
    termination_reason: TerminationReason | None = None
    is_correct: bool = False
    trajectories: list[Trajectory] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        items = self.trajectories
        if isinstance(items, dict):
            items = list(items.items())
        named: list[Trajectory] = []
        for item in items:
            if isinstance(item, tuple):
                name, trajectory = item
                trajectory.name = name
                item = trajectory
            named.append(item)
        self.trajectories = named
        if isinstance(self.termination_reason, str):
            self.termination_reason = TerminationReason.parse(self.termination_reason)

    @property
    def task_id(self) -> str:
        """The task part of ``id`` (everything before the last ``:``)."""
        return self.id.rpartition(":")[0] if ":" in self.id else self.id

    @property
    def rollout_idx(self) -> str:
        """The rollout part of ``id`` (after the last ``:``), or ``""``."""
        return self.id.rpartition(":")[2] if ":" in self.id else ""

    def to_dict(self) -> dict[str, Any]:
        reason = self.termination_reason
        return {
            "id": self.id,
            "task": to_plain(self.task),
            "termination_reason": None if reason is None else reason.value,
            "is_correct": bool(self.is_correct),
            "trajectories": [t.to_dict() for t in self.trajectories],
            "metrics": to_plain(self.metrics),
            "info": to_plain(self.info),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Episode:
        reason = data.get("termination_reason")
        return cls(
            id=data.get("id", ""),
            task=data.get("task"),
            termination_reason=None if reason is None else TerminationReason.parse(reason),
            is_correct=bool(data.get("is_correct", False)),
            trajectories=[Trajectory.from_dict(t) for t in data.get("trajectories", [])],
            metrics=dict(data.get("metrics") or {}),
            info=dict(data.get("info") or {}),
        )
