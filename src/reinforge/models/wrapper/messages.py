"""The OpenAI-style message lists that chat calls take."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

ROLES = {"system", "user", "assistant", "tool", "developer"}


def validate_messages(messages: Any) -> list[dict[str, Any]]:
    """Check the OpenAI-style message list shape; raise ValueError naming the bad entry."""
    if not isinstance(messages, Sequence) or isinstance(messages, str) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            raise ValueError(f"messages[{i}] must be a dict, got {type(msg).__name__}")
        role = msg.get("role")
        if not isinstance(role, str) or role not in ROLES:
            raise ValueError(
                f"messages[{i}] has unknown role {role!r}; expected one of {sorted(ROLES)}"
            )
        content = msg.get("content")
        if content is not None and not isinstance(content, str | list):
            raise ValueError(
                f"messages[{i}].content must be a string, got {type(content).__name__}"
            )
        if isinstance(content, list) and not all(isinstance(part, dict) for part in content):
            raise ValueError(f"messages[{i}].content parts must be objects like {{'type': 'text'}}")
        calls = msg.get("tool_calls")
        if calls is not None and (
            not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls)
        ):
            raise ValueError(f"messages[{i}].tool_calls must be a list of tool call objects")
    return list(messages)


def tools_key(tools: list[dict] | None) -> str:
    """A canonical string of a tool list, so turns rendered with the same tools match."""
    return "" if not tools else json.dumps(tools, sort_keys=True)
