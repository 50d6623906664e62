"""Give token ids to steps whose agent recorded only the reply text.

Many rLLM agents build their steps in ``update_from_model(response)`` from the text
alone and never store the ``ModelOutput``; rLLM then re-tokenizes the chat. reinforge
does not re-tokenize, so the rollout engine remembers each call (the messages sent
and the output returned) and ``attach_model_outputs`` hands each token-less step the
output of the call that produced it: same reply text, and the messages of the
call are a prefix of the step's conversation (when the step has one). Calls are
matched in order and used at most once; a step with no matching call keeps no
tokens and is left out of the experiences.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from reinforge.core.episode import Episode, Step
from reinforge.core.model_output import ModelOutput

Call = tuple[Sequence[dict[str, Any]], ModelOutput]


def attach_output(step: Step, out: ModelOutput) -> None:
    """Give ``step`` the token ids, log-probs and weight version of the call ``out``."""
    step.model_output = out
    step.prompt_ids = list(out.prompt_ids or [])
    step.response_ids = list(out.completion_ids or [])
    step.logprobs = list(out.logprobs or [])
    if step.weight_version is None:
        step.weight_version = out.weight_version


def _same_tokens(step: Step, out: ModelOutput) -> bool:
    same_prompt = list(step.prompt_ids) == list(out.prompt_ids or [])
    return same_prompt and list(step.response_ids) == list(out.completion_ids or [])


def _produced(step: Step, messages: Sequence[dict[str, Any]], out: ModelOutput) -> bool:
    reply = step.model_response
    if reply not in (out.text, out.content):
        return False
    chat = step.chat_completions
    return not chat or list(chat[: len(messages)]) == list(messages)


def attach_model_outputs(episode: Episode, calls: Iterable[Call]) -> int:
    """Attach outputs of ``calls`` to token-less steps of ``episode``; return how many."""
    pool = list(calls)
    if not pool:
        return 0
    steps = [step for traj in episode.trajectories for step in traj.steps]
    for step in steps:  # calls already attached by the workflow itself are not free
        if step.has_tokens:
            for i, (_, out) in enumerate(pool):
                if _same_tokens(step, out):
                    del pool[i]
                    break
    attached = 0
    for step in steps:
        if step.has_tokens or not step.model_response:
            continue
        for i, (messages, out) in enumerate(pool):
            if _produced(step, messages, out):
                del pool[i]
                attach_output(step, out)
                attached += 1
                break
    return attached
