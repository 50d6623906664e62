"""Which recorded call each step of an AgentFlow's episode trains on.

A flow returns steps holding text (``chat_completions``, ``model_response`` or
``output``) and no token ids; the rollout's session recorded every call with its ids.
``claim_calls`` gives each step the ids of the call that produced it:

1. a step that already holds ids holds them from one of the calls (that call is taken);
2. a step whose reply text is that of a call, its conversation starting with the
   call's messages, gets that call (so two calls that answered with the same text go
   to the steps whose conversations they answered);
3. steps left without ids take the calls left over, in the order they were made
   (rLLM's own rule);
4. a trajectory without steps (the flow returned None) gets one step per call left.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from reinforge.core import Experience
from reinforge.core.agentflow import Episode, Step
from reinforge.core.episode import Step as CoreStep
from reinforge.core.model_output import ModelOutput
from reinforge.workflows.episode.attach import attach_output
from reinforge.workflows.episode.rollout_engine import ModelWrapperEngine

__all__ = ["RecordedCall", "claim_calls", "recorded_calls", "reply_text", "step_of"]


@dataclass
class RecordedCall:
    """One reply the policy gave a flow: the conversation it answered, and the output."""

    messages: list[dict[str, Any]]
    output: ModelOutput
    index: int = 0


def recorded_calls(experiences: Iterable[Experience]) -> list[RecordedCall]:
    """The calls a session's history holds (one experience per reply, ``shape="turn"``):
    the messages sent and a ``ModelOutput`` whose ids are the experience's, not re-encoded."""
    calls = []
    for i, exp in enumerate(experiences):
        sent = copy.deepcopy(list(exp.messages or [])[:-1])  # the reply is the last message
        output = ModelWrapperEngine.to_model_output(exp, with_tools=bool(exp.tools))
        calls.append(RecordedCall(sent, output, i))
    return calls


def reply_text(step: CoreStep) -> str:
    """What the step says the model replied: ``model_response``, else a text ``output``."""
    if step.model_response:
        return step.model_response
    output = getattr(step, "output", None)
    return output if isinstance(output, str) else ""


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else message


def _continues(chat: list[dict[str, Any]], messages: list[dict[str, Any]]) -> bool:
    """Whether ``chat`` starts with ``messages`` (roles and contents; True when empty)."""
    if not chat:
        return True
    if len(chat) < len(messages):
        return False
    return all(
        isinstance(a, dict) and a.get("role") == b.get("role") and _content(a) == _content(b)
        for a, b in zip(chat, messages, strict=False)
    )


def _assistant(out: ModelOutput) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": out.content}
    if out.reasoning:
        message["reasoning"] = out.reasoning
    if out.tool_calls:
        message["tool_calls"] = out.tool_calls
    return message


def _attach(step: CoreStep, call: RecordedCall) -> None:
    out = call.output
    attach_output(step, out)
    if not step.chat_completions:
        step.chat_completions = [*copy.deepcopy(call.messages), _assistant(out)]
    if not step.model_response:
        step.model_response = out.content or ""


def step_of(call: RecordedCall) -> Step:
    """A step built from a call alone (for a trajectory the flow left empty)."""
    out = call.output
    step = Step.from_model_output(out, copy.deepcopy(call.messages))
    step.output = out.content
    return step


def claim_calls(episode: Episode, calls: Iterable[RecordedCall]) -> list[RecordedCall]:
    """Give the episode's steps the token ids of ``calls`` (the module docstring's
    rules); the calls no step took."""
    pool = list(calls)
    steps = [step for traj in episode.trajectories for step in traj.steps]
    for step in steps:  # steps that already hold ids hold them from one of the calls
        if step.has_tokens:
            for i, call in enumerate(pool):
                out = call.output
                if list(out.prompt_ids or []) == list(step.prompt_ids) and list(
                    out.completion_ids or []
                ) == list(step.response_ids):
                    del pool[i]
                    break
    for step in steps:
        text = reply_text(step)
        if step.has_tokens or not text:
            continue
        for i, call in enumerate(pool):
            if text in (call.output.text, call.output.content) and _continues(
                step.chat_completions, call.messages
            ):
                _attach(step, pool.pop(i))
                break
    for step in steps:
        if not step.has_tokens and pool:
            _attach(step, pool.pop(0))
    for traj in episode.trajectories:
        if not traj.steps and pool:
            traj.steps = [step_of(call) for call in pool]
            pool = []
    return pool
