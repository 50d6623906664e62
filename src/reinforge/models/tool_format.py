"""Tool calls in the model's own text format, and their OpenAI-style structured form.

A model calls a tool by writing text; the OpenAI API exposes structured
``tool_calls``. This module converts between the two for the format most small
chat models are trained on: a JSON object (or a list of them) with ``name`` and
``arguments`` between ``<tool_call>`` and ``</tool_call>``.

Chat templates that know about tools (they reference ``tools`` / ``tool_calls``)
render tool definitions and calls themselves. For templates that do not (SmolLM2's
is plain ChatML), ``prepare_messages`` puts the tool list into the system message
and writes earlier tool calls back into the assistant text, in the same format the
parser reads, so the conversation the model sees is the one it produced.
"""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)

#: kept short: on a CPU every prompt token is paid for in every rollout and every
#: training row (this is about 55 tokens, plus the schemas)
TOOLS_SYSTEM_PROMPT = (
    "Functions you can call (JSON schemas):\n<tools>{tools}</tools>\n"
    'To call, reply <tool_call>[{{"name": "function_name", "arguments": '
    '{{"argument": "value"}}}}]</tool_call>; otherwise answer in plain text.'
)


@dataclass
class ParsedReply:
    """The text of a reply split into prose and tool calls."""

    content: str | None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    #: why some ``<tool_call>`` block could not be read (the text is kept in ``content``)
    error: str | None = None


def template_supports_tools(template: str | None) -> bool:
    return bool(template) and ("tool_calls" in template or "tools" in template)


def _call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def _as_call(item: Any) -> dict[str, Any]:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str):
        raise ValueError("each tool call needs a string 'name'")
    args = item.get("arguments", item.get("parameters", {}))
    if isinstance(args, str):
        args = json.loads(args)
    if not isinstance(args, dict):
        raise ValueError("tool call 'arguments' must be a JSON object")
    return {
        "id": _call_id(),
        "type": "function",
        "function": {"name": item["name"], "arguments": json.dumps(args, ensure_ascii=False)},
    }


def parse_tool_calls(text: str) -> ParsedReply:
    """Split a reply into content and tool calls; malformed calls are reported, not raised."""
    if "<tool_call>" not in text:
        return ParsedReply(content=text)
    calls: list[dict[str, Any]] = []
    errors: list[str] = []
    for block in _CALL.findall(text):
        try:
            data = json.loads(block.strip())
            items = data if isinstance(data, list) else [data]
            calls.extend(_as_call(item) for item in items)
        except (ValueError, TypeError) as exc:
            errors.append(f"{exc}: {block.strip()[:200]!r}")
    if errors:
        return ParsedReply(content=text, error="malformed tool call: " + "; ".join(errors))
    prose = _CALL.sub("", text).strip()
    return ParsedReply(content=prose or None, tool_calls=calls)


def _name_and_arguments(call: dict[str, Any], missing: Any) -> tuple[Any, Any]:
    """A call's function name and arguments, JSON-decoded when they are a string."""
    fn = call.get("function", call)
    args = fn.get("arguments", missing)
    if isinstance(args, str):
        with contextlib.suppress(ValueError):
            args = json.loads(args)
    return fn.get("name"), args


def render_tool_calls(tool_calls: list[dict[str, Any]]) -> str:
    """The text a model in this format writes for these calls (inverse of the parser)."""
    items = []
    for call in tool_calls:
        name, args = _name_and_arguments(call, {})
        items.append({"name": name, "arguments": args})
    return "<tool_call>" + json.dumps(items, ensure_ascii=False) + "</tool_call>"


def message_text(content: Any) -> str:
    """Message content as plain text (OpenAI allows a list of typed parts)."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content)


def prepare_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, native: bool
) -> list[dict[str, Any]]:
    """Messages a chat template can render: plain-text content for non-tool templates."""
    if native:
        return [
            m if m.get("content") is not None or m.get("tool_calls") else {**m, "content": ""}
            for m in messages
        ]
    if not tools and all(
        type(m.get("content")) is str and not m.get("tool_calls") for m in messages
    ):
        return messages  # already plain text: the common case, kept allocation-free
    out: list[dict[str, Any]] = []
    for msg in messages:
        text = message_text(msg.get("content"))
        if msg.get("role") == "assistant" and msg.get("tool_calls"):
            text = (text + "\n" if text else "") + render_tool_calls(msg["tool_calls"])
        out.append({"role": msg["role"], "content": text})
    if tools:
        listing = "\n".join(json.dumps(t, ensure_ascii=False) for t in tools)
        prompt = TOOLS_SYSTEM_PROMPT.format(tools=listing)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": out[0]["content"] + "\n\n" + prompt}
        else:
            out.insert(0, {"role": "system", "content": prompt})
    return out


def canonical_message(msg: dict[str, Any]) -> tuple:
    """What identifies a message when matching a conversation against earlier turns."""
    calls = ()
    if msg.get("tool_calls"):
        items = []
        for call in msg["tool_calls"]:
            name, args = _name_and_arguments(call, None)
            items.append((name, json.dumps(args, sort_keys=True)))
        calls = tuple(items)
    return (msg.get("role"), message_text(msg.get("content")), calls)


def template_source(tokenizer: Any, chat_template: str | None = None) -> str | None:
    """The Jinja source a tokenizer renders chats with (None for non-HF tokenizers)."""
    return chat_template or getattr(getattr(tokenizer, "hf", None), "chat_template", None)


def render_messages(
    tokenizer: Any,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    add_generation_prompt: bool = True,
    chat_template: str | None = None,
    native: bool | None = None,
) -> str:
    """The chat template's text for OpenAI-style messages, tool calls included."""
    if native is None:
        native = template_supports_tools(template_source(tokenizer, chat_template))
    return tokenizer.render_chat(
        prepare_messages(messages, tools, native),
        add_generation_prompt=add_generation_prompt,
        tools=tools if native else None,
        chat_template=chat_template,
    )
