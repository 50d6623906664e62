"""MultiTurnWorkflow: a base for agents that talk to an environment over many turns.

A subclass runs the loop (model reply → environment → observation as the next user
message → ...) with the helpers here, then turns the conversation into training
data with ``process_messages_to_experience``. That helper does not re-tokenize the
conversation: it joins the turns the model actually sampled. Each turn's prompt
extends the previous turn's exact tokens (the model wrapper builds it so), so the
whole conversation is one token sequence: the first prompt, then every reply with
``action_mask`` 1 and the glue between replies (end-of-turn markers, observations)
with ``action_mask`` 0, each sampled token keeping its sampling log-probability.

If a turn's prompt does not extend the previous turn (the workflow edited earlier
messages, e.g. dropped old turns to fit the context), one sequence cannot hold the
conversation; ``process_messages_to_experiences`` then returns one experience per
unbroken stretch of turns, and ``process_messages_to_experience`` raises.

A workflow written for Trinity-RFT calls ``self.model.chat_async`` itself, so no turn
is recorded; its conversation is then re-tokenized as Trinity does
(``ModelWrapper.convert_messages_to_experience``: chat template, assistant turns
masked in, log-probabilities scored afterwards) and marked
``info["retokenized"] = True``. Recorded turns always take the token-exact path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reinforge.core import EID, Experience, Task
from reinforge.models.history import is_token_prefix, merge_chain
from reinforge.models.wrapper.sampling_args import rollout_kwargs
from reinforge.workflows.workflow import Workflow


def split_chains(turns: Sequence[Experience]) -> list[list[Experience]]:
    """Consecutive turns grouped so that, within a group, each turn extends the previous one.

    "Extends" means the turn's prompt starts with all of the previous turn's tokens.
    """
    chains: list[list[Experience]] = []
    for turn in turns:
        if chains:
            prev = chains[-1][-1]
            if turn.prompt_length >= prev.tokens.shape[0] and is_token_prefix(
                prev.tokens, turn.tokens
            ):
                chains[-1].append(turn)
                continue
        chains.append([turn])
    return chains


def merge_turns(chain: Sequence[Experience]) -> Experience:
    """One experience for a chain of turns (see ``split_chains``), tokens taken as sampled.

    The model wrapper's conversation merge, plus: every reply's text in
    ``response_text`` and the first (oldest) turn's policy version.
    """
    exp = merge_chain(list(chain))
    exp.eid = EID()
    exp.reward = None
    exp.metrics = {}
    exp.response_text = "\n".join(t.response_text or "" for t in chain)
    if "model_version" in chain[0].info:
        exp.info["model_version"] = chain[0].info["model_version"]
    return exp


# tokens allowed for the chat template's glue around a new message (role headers, markers)
CONTEXT_MARGIN = 32


def context_full(
    model: Any,
    last_turn: Experience | None,
    max_tokens: int | None = None,
    pending: str | None = None,
) -> bool:
    """Whether the next turn might not fit the engine's context window.

    The next prompt is ``last_turn``'s tokens plus the ``pending`` message text (the
    observation about to be sent) plus template glue; the reply needs ``max_tokens``
    (default: the model's default) on top.
    """
    limit = getattr(getattr(model, "engine", None), "max_model_len", None)
    if limit is None or last_turn is None:
        return False
    reply = max_tokens or getattr(model, "default_max_tokens", 256)
    new = len(model.tokenizer.encode(pending)) if pending else 0
    return last_turn.tokens.shape[0] + new + CONTEXT_MARGIN + reply > limit


def _same_turns(sent: list[dict[str, Any]], given: list[dict[str, Any]]) -> bool:
    """Whether ``sent`` (what the model saw plus its reply) starts ``given``."""
    if len(sent) > len(given):
        return False
    for a, b in zip(sent, given, strict=False):
        if a.get("role") != b.get("role"):
            return False
        ca, cb = a.get("content"), b.get("content")
        if isinstance(ca, str) and isinstance(cb, str):
            if ca.strip() != cb.strip():
                return False
        elif ca != cb:
            return False
    return True


class MultiTurnWorkflow(Workflow):
    """Base class for environment loops; subclasses implement ``run`` or ``run_async``.

    ``self.turns`` collects the experience of every model call made through the
    helpers since the last ``process_messages_to_experience`` (or ``reset_turns``).
    """

    def __init__(
        self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None
    ) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.turns: list[Experience] = []

    # ---- calling the model -------------------------------------------------------------

    def chat_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """Sampling arguments from the task's ``rollout_args``: one reply per turn."""
        kwargs = rollout_kwargs(self.task.rollout_args)
        kwargs["n"] = 1
        kwargs.update(overrides)
        return kwargs

    def _record(self, exps: list[Experience]) -> list[Experience]:
        if len(exps) != 1:
            raise ValueError(f"a turn must sample one reply, got {len(exps)} (n must be 1)")
        self.turns.append(exps[0])
        return exps

    def get_model_response(self, messages: list[dict[str, Any]], **kwargs: Any) -> list[Experience]:
        """Sample the next reply (a one-element list) and record it as a turn."""
        return self._record(self.model.chat(messages, **self.chat_kwargs(**kwargs)))

    async def get_model_response_async(
        self, messages: list[dict[str, Any]], **kwargs: Any
    ) -> list[Experience]:
        exps = await self.model.chat_async(messages, **self.chat_kwargs(**kwargs))
        return self._record(exps)

    def get_model_response_text(self, messages: list[dict[str, Any]], **kwargs: Any) -> str:
        """The next reply's text (the turn is recorded)."""
        return self.get_model_response(messages, **kwargs)[0].response_text or ""

    async def get_model_response_text_async(
        self, messages: list[dict[str, Any]], **kwargs: Any
    ) -> str:
        exps = await self.get_model_response_async(messages, **kwargs)
        return exps[0].response_text or ""

    def context_full(self, pending: str | None = None) -> bool:
        """Whether another turn, after sending the ``pending`` message, might not fit."""
        last = self.turns[-1] if self.turns else None
        return context_full(self.model, last, self.task.rollout_args.max_tokens, pending)

    def reset_turns(self) -> None:
        """Forget the recorded turns (start of a new conversation)."""
        self.turns = []

    # ---- building experiences ------------------------------------------------------------

    def _take_turns(self, messages: list[dict[str, Any]]) -> list[Experience]:
        """The recorded turns (consumed), checked to be the start of ``messages``."""
        turns, self.turns = self.turns, []
        last = turns[-1].messages if turns else None
        if last is not None and not _same_turns(last, messages):
            raise ValueError(
                "the messages given do not continue the last recorded turn (conversation "
                "plus reply); pass the conversation the model actually saw, and call "
                "reset_turns() between conversations"
            )
        return turns

    def process_messages_to_experiences(
        self,
        messages: list[dict[str, Any]],
        reward: float,
        info: dict[str, Any] | None = None,
        truncate_status: str | None = None,
    ) -> list[Experience]:
        """Experiences of the conversation ``messages``; the recorded turns are consumed.

        From recorded turns: token-exact, usually one experience, more when the
        conversation could not be kept as one token sequence (see the module
        docstring). With no recorded turns (the model was called directly): one
        experience re-tokenized from the messages (see ``finish_retokenized``).
        """
        turns = self._take_turns(messages)
        if not turns:
            exp = self.model.convert_messages_to_experience(messages)
            return [finish_retokenized(exp, reward, info, truncate_status)]
        return merge_recorded(turns, messages, reward, info, truncate_status)

    def process_messages_to_experience(
        self,
        messages: list[dict[str, Any]],
        reward: float,
        info: dict[str, Any] | None = None,
        truncate_status: str | None = None,
    ) -> Experience:
        """The conversation as one experience: token-exact from the recorded turns, else
        re-tokenized as Trinity-RFT does (``info["retokenized"]``).

        ``truncate_status`` marks an episode the workflow cut short (e.g.
        ``"response_truncated"`` when its token budget ran out); a status the
        experience already has (a turn cut at ``max_tokens``) takes precedence.
        """
        return _only(self.process_messages_to_experiences(messages, reward, info, truncate_status))

    async def process_messages_to_experience_async(
        self,
        messages: list[dict[str, Any]],
        reward: float,
        info: dict[str, Any] | None = None,
        truncate_status: str | None = None,
    ) -> Experience:
        """``process_messages_to_experience`` that awaits the model's scoring."""
        turns = self._take_turns(messages)
        if not turns:
            exp = await self.model.convert_messages_to_experience_async(messages)
            return finish_retokenized(exp, reward, info, truncate_status)
        return _only(merge_recorded(turns, messages, reward, info, truncate_status))


def _numeric(info: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in info.items() if isinstance(v, int | float | bool)}


def merge_recorded(
    turns: list[Experience],
    messages: list[dict[str, Any]],
    reward: float,
    info: dict[str, Any] | None,
    truncate_status: str | None,
) -> list[Experience]:
    """Token-exact experiences of recorded turns, one per unbroken stretch (``split_chains``).

    Each gets ``reward``, ``messages``, ``info`` and, as ``metrics``, the numeric
    entries of ``info``.
    """
    info = dict(info or {})
    metrics = _numeric(info)
    out = []
    chains = split_chains(turns)
    for chain in chains:
        exp = merge_turns(chain)
        exp.reward = float(reward)
        exp.messages = list(messages)
        exp.info.update(info)
        exp.info["segments"] = len(chains)
        exp.metrics.update(metrics)
        exp.truncate_status = exp.truncate_status or truncate_status
        out.append(exp)
    return out


def finish_retokenized(
    exp: Experience,
    reward: float,
    info: dict[str, Any] | None,
    truncate_status: str | None,
) -> Experience:
    """A re-tokenized conversation with the workflow's reward and info, as Trinity-RFT
    finishes it: a conversation cut at the context length scores 0."""
    exp.reward = 0.0 if exp.truncate_status == "response_truncated" else float(reward)
    exp.truncate_status = exp.truncate_status or truncate_status
    exp.info.update(info or {})
    exp.metrics.update(_numeric(info or {}))
    return exp


def _only(exps: list[Experience]) -> Experience:
    if len(exps) != 1:
        raise ValueError(
            f"the conversation breaks into {len(exps)} token sequences: a turn's prompt "
            "does not extend the previous turn's tokens (were earlier messages edited?); "
            "use process_messages_to_experiences"
        )
    return exps[0]
