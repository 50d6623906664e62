"""Demonstrations for SFT: JSON-lines conversations read, checked and tokenized.

Each row holds an OpenAI-format message list (system, user, assistant, tool roles;
assistant ``tool_calls``) and optionally its tools. It becomes one Experience in the
format RL uses: the whole conversation rendered with the model's chat template, the
prompt up to the first assistant turn, and ``action_mask`` 1 on the tokens of every
assistant turn only (user turns and tool results are context, not targets). So the
trainer needs nothing SFT-specific beyond the ``sft`` loss.

A bad row stops the run with an error naming the file and line: a demonstration set
is small and hand-made or generated, and silently training on part of it hides the
bug that broke the rest.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reinforge.buffer.sft_dataset_config import SftDatasetConfig
from reinforge.core import Experience
from reinforge.models.wrapper.chat_prompts import ContextLengthError
from reinforge.models.wrapper.messages import validate_messages
from reinforge.models.wrapper.retokenized import Render, tokenize_conversation


class SftDataError(ValueError):
    """A demonstration row that cannot be trained on; the message names file and line."""


@dataclass
class Conversation:
    """One checked row: its messages, its tools, and where it came from (``file:line``)."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None
    source: str


@dataclass
class Demonstrations:
    """A tokenized demonstration set, with what had to be cut or left out."""

    experiences: list[Experience]
    #: rows cut at the length limit (their tail is not trained on)
    truncated: list[str] = field(default_factory=list)
    #: rows skipped because their first assistant turn starts past the length limit
    skipped: list[str] = field(default_factory=list)


def resolve_dataset_path(config: SftDatasetConfig, base_dir: str | Path | None) -> Path:
    path = Path(config.path).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    return path


def _check_row(row: Any, where: str, config: SftDatasetConfig) -> Conversation:
    fmt = config.format
    if not isinstance(row, dict):
        raise SftDataError(f"{where}: a row must be a JSON object, got {type(row).__name__}")
    if fmt.messages_key not in row:
        raise SftDataError(
            f"{where}: no '{fmt.messages_key}' key (format.messages_key); keys: {sorted(row)}"
        )
    try:
        messages = validate_messages(row[fmt.messages_key])
    except ValueError as exc:
        raise SftDataError(f"{where}: {exc}") from None
    if not any(m["role"] == "assistant" for m in messages):
        raise SftDataError(f"{where}: no assistant message, so nothing to learn from")
    tools = row.get(fmt.tools_key)
    if tools is not None and (
        not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools)
    ):
        raise SftDataError(f"{where}: '{fmt.tools_key}' must be a list of tool objects")
    return Conversation(messages=messages, tools=tools or None, source=where)


def read_conversations(
    config: SftDatasetConfig, base_dir: str | Path | None = None
) -> list[Conversation]:
    """The checked rows of the dataset's JSON-lines file (blank lines ignored)."""
    path = resolve_dataset_path(config, base_dir)
    if path.suffix != ".jsonl":
        raise SftDataError(f"{path}: SFT data must be a .jsonl file (one conversation a line)")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise SftDataError(f"cannot read the SFT data {path}: {exc.strerror or exc}") from None
    rows: list[Conversation] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SftDataError(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno})"
            ) from None
        rows.append(_check_row(row, where, config))
        if config.limit is not None and len(rows) >= config.limit:
            break
    if not rows:
        raise SftDataError(f"{path}: no conversations in the file")
    return rows


def tokenize_demonstrations(
    conversations: list[Conversation],
    render: Render,
    encode: Callable[[str], list[int]],
    max_model_len: int | None,
) -> Demonstrations:
    """One Experience per conversation, masked to its assistant turns.

    A conversation longer than ``max_model_len - 1`` tokens is truncated there (its
    later tokens are not trained on); one whose first assistant turn starts beyond
    that is skipped. Both are listed in the result for the caller to report.
    """
    out = Demonstrations(experiences=[])
    for conv in conversations:
        try:
            tokens = tokenize_conversation(render, encode, conv.messages, conv.tools, max_model_len)
        except ContextLengthError:
            out.skipped.append(conv.source)
            continue
        except ValueError as exc:
            raise SftDataError(f"{conv.source}: {exc}") from None
        if tokens.prompt_length == 0:
            raise SftDataError(
                f"{conv.source}: the conversation opens with an assistant turn; it needs a "
                "system or user message before it to be predicted from"
            )
        if tokens.truncate_status is not None:
            out.truncated.append(conv.source)
        start = tokens.prompt_length
        out.experiences.append(
            Experience(
                tokens=tokens.ids,
                prompt_length=start,
                action_mask=tokens.assistant_mask[start:],
                messages=conv.messages,
                tools=conv.tools,
                truncate_status=tokens.truncate_status,
                info={"source": conv.source, "demonstration": True},
            )
        )
    return out
