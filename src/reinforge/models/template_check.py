"""Is a chat template append-only? The question token-exact multi-turn training depends on.

A multi-turn experience is the first prompt followed by every later token, with the
model's sampled replies kept as sampled. That is only the sequence the model saw if
rendering a conversation always starts with the rendering of its earlier part
(prefix-consistent, "append-only"). Templates that rewrite history, e.g. drop the
reasoning of earlier assistant turns or move the system prompt, are not; for them
reinforge renders each turn afresh and keeps one experience per turn.

``check_template`` renders sample conversations (plain chat, a system prompt, tool
calls and results, reasoning in a reply) turn by turn and reports every place where
a later rendering does not extend an earlier one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from reinforge.models.tool_format import (
    render_messages,
    template_source,
    template_supports_tools,
)

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]

_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}

SAMPLE_CONVERSATIONS: dict[str, tuple[list[dict[str, Any]], list[dict] | None]] = {
    "chat": (
        [
            {"role": "user", "content": "What is 2 + 3?"},
            {"role": "assistant", "content": "5"},
            {"role": "user", "content": "And times 4?"},
            {"role": "assistant", "content": "20"},
            {"role": "user", "content": "Thanks!"},
        ],
        None,
    ),
    "system prompt": (
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Name a color."},
            {"role": "assistant", "content": "Blue."},
            {"role": "user", "content": "Another."},
        ],
        None,
    ),
    "tool call": (
        [
            {"role": "user", "content": "Weather in Paris?"},
            {"role": "assistant", "content": None, "tool_calls": [_CALL]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18 C, cloudy"},
            {"role": "assistant", "content": "It is 18 C and cloudy."},
            {"role": "user", "content": "And tomorrow?"},
        ],
        _TOOLS,
    ),
    "reasoning": (
        [
            {"role": "user", "content": "Is 7 prime?"},
            {"role": "assistant", "content": "<think>7 has no divisors but 1 and 7.</think>Yes."},
            {"role": "user", "content": "Is 9?"},
        ],
        None,
    ),
}


@dataclass
class TemplateReport:
    """Result of ``check_template``."""

    append_only: bool
    native_tools: bool
    checked: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        verdict = "append-only" if self.append_only else "NOT append-only"
        lines = [
            f"chat template: {verdict} ({len(self.checked)} sample conversations)",
            "tool calls: rendered by the template"
            if self.native_tools
            else "tool calls: written as <tool_call> JSON by reinforge (template has no tool support)",
        ]
        lines += [f"  - {p}" for p in self.problems]
        if not self.append_only:
            lines.append(
                "multi-turn history falls back to one experience per turn for this template"
            )
        return "\n".join(lines)


def _first_difference(a: str, b: str) -> str:
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return f"at char {i}: {a[i : i + 40]!r} became {b[i : i + 40]!r}"


def check_template(tokenizer: Any, chat_template: str | None = None) -> TemplateReport:
    """Render the sample conversations turn by turn; report where a rendering is rewritten."""
    native = template_supports_tools(template_source(tokenizer, chat_template))
    report = TemplateReport(append_only=True, native_tools=native)

    def render(msgs: list[dict[str, Any]], tools: list[dict] | None, gen: bool) -> str:
        return render_messages(tokenizer, msgs, tools, gen, chat_template, native)

    for name, (messages, tools) in SAMPLE_CONVERSATIONS.items():
        report.checked.append(name)
        try:
            previous: str | None = None
            for k, msg in enumerate(messages):
                if msg["role"] != "assistant":
                    continue
                prompt = render(messages[:k], tools, True)
                through = render(messages[: k + 1], tools, False)
                if previous is not None and not prompt.startswith(previous):
                    report.problems.append(
                        f"{name}: turn {k} re-renders earlier turns "
                        + _first_difference(previous, prompt)
                    )
                if not through.startswith(prompt):
                    report.problems.append(
                        f"{name}: the reply at turn {k} is not written after the generation "
                        "prompt " + _first_difference(prompt, through)
                    )
                previous = through
            final = render(messages, tools, True)
            if previous is not None and not final.startswith(previous):
                report.problems.append(
                    f"{name}: the last turn re-renders earlier turns "
                    + _first_difference(previous, final)
                )
        except Exception as exc:  # a template may reject a message shape
            report.problems.append(f"{name}: the template failed to render: {exc}")
    report.append_only = not report.problems
    return report


def load_tokenizer(model: str) -> Any:
    """The chat tokenizer of a catalog model name or a local HF model directory."""
    from transformers import AutoTokenizer

    from reinforge.models.catalog import resolve_model_path
    from reinforge.models.tokenizer import HFChatTokenizer

    path = resolve_model_path(model)
    return HFChatTokenizer(AutoTokenizer.from_pretrained(str(path)))
