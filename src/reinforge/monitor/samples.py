"""A few sample completions of a step, for sinks that can show text (TensorBoard).

Looking at what the policy actually writes catches what curves hide (a format
the reward function misreads, answers cut off at the token limit, degenerate
repetitions). ``sample_completions`` picks ``k`` experiences of a step from
different tasks, spread over the batch, and keeps what a reader needs of each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MAX_CHARS = 2000  # per prompt or response: a sample is for reading, not for archiving


def _clip(text: str, limit: int = MAX_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} more chars]"


def _last(messages: list[dict[str, Any]] | None, roles: tuple[str, ...]) -> str | None:
    for message in reversed(messages or []):
        if message.get("role") in roles and isinstance(message.get("content"), str):
            return message["content"]
    return None


def _conversation(messages: list[dict[str, Any]]) -> str:
    return "\n".join(
        f"{m.get('role', '?')}: {m.get('content')}"
        for m in messages
        if isinstance(m.get("content"), str)
    )


def _sample(exp: Any) -> dict[str, Any]:
    messages = getattr(exp, "messages", None)
    eid = getattr(exp, "eid", None)
    prompt = getattr(exp, "prompt_text", None) or _last(messages, ("user",)) or ""
    response = getattr(exp, "response_text", None)
    if response is None and messages:
        # multi-turn: everything after the first user turn is the model's part
        first_user = next((i for i, m in enumerate(messages) if m.get("role") == "user"), -1)
        response = _conversation(messages[first_user + 1 :])
    return {
        "task": str(getattr(eid, "task", "")),
        "run": int(getattr(eid, "run", 0) or 0),
        "reward": getattr(exp, "reward", None),
        "response_length": int(getattr(exp, "response_length", 0) or 0),
        "truncated": getattr(exp, "truncate_status", None) is not None,
        "prompt": _clip(str(prompt)),
        "response": _clip(str(response or "")),
    }


def sample_completions(experiences: Sequence[Any], k: int = 4) -> list[dict[str, Any]]:
    """Up to ``k`` experiences as plain dicts (task, run, reward, response length,
    truncated, prompt, response), each from a different task when there are ``k``
    tasks, evenly spread over the batch; the first rollout of each chosen task.

    Deterministic for a given batch, so a rerun shows the same samples.
    """
    if k <= 0 or not experiences:
        return []
    firsts: dict[str, Any] = {}
    for exp in experiences:
        eid = getattr(exp, "eid", None)
        key = str(getattr(eid, "tid", id(exp)))
        firsts.setdefault(key, exp)
    pool = list(firsts.values())
    if len(pool) < k:  # fewer tasks than samples: fill up with further rollouts
        chosen = set(map(id, pool))
        pool += [e for e in experiences if id(e) not in chosen][: k - len(pool)]
    if len(pool) > k:
        pool = [pool[i * len(pool) // k] for i in range(k)]
    return [_sample(exp) for exp in pool]


def samples_markdown(samples: list[dict[str, Any]]) -> str:
    """The samples as Markdown (TensorBoard renders text summaries as Markdown).

    Prompt and response go in indented code blocks, so whatever they contain
    (backticks, HTML, Markdown) is shown as written.
    """
    parts: list[str] = []
    for sample in samples:
        reward = sample.get("reward")
        shown = "none" if reward is None else f"{float(reward):.4g}"
        head = (
            f"**task {sample.get('task', '')}, run {sample.get('run', 0)}**: "
            f"reward {shown}, {sample.get('response_length', 0)} response tokens"
            + (", truncated" if sample.get("truncated") else "")
        )
        parts.append(
            f"{head}\n\nprompt:\n\n{_indent(sample.get('prompt', ''))}\n\n"
            f"response:\n\n{_indent(sample.get('response', ''))}"
        )
    return "\n\n---\n\n".join(parts)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in (str(text).splitlines() or [""]))
