"""Tool calls: text format <-> OpenAI structure, and rendering for templates without tools."""

from __future__ import annotations

import json

from reinforge.models.tool_format import (
    canonical_message,
    parse_tool_calls,
    prepare_messages,
    render_tool_calls,
    template_supports_tools,
)


def test_parse_list_and_single_object() -> None:
    text = 'Let me check.<tool_call>[{"name": "add", "arguments": {"a": 1, "b": 2}}]</tool_call>'
    parsed = parse_tool_calls(text)
    assert parsed.content == "Let me check."
    assert [c["function"]["name"] for c in parsed.tool_calls] == ["add"]
    assert json.loads(parsed.tool_calls[0]["function"]["arguments"]) == {"a": 1, "b": 2}
    assert parsed.tool_calls[0]["id"].startswith("call_")
    single = parse_tool_calls('<tool_call>{"name": "f", "arguments": "{\\"x\\": 3}"}</tool_call>')
    assert single.content is None
    assert json.loads(single.tool_calls[0]["function"]["arguments"]) == {"x": 3}


def test_two_blocks_and_unterminated_block() -> None:
    text = '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{"name": "b"}'
    parsed = parse_tool_calls(text)
    assert [c["function"]["name"] for c in parsed.tool_calls] == ["a", "b"]


def test_malformed_call_is_reported_and_text_kept() -> None:
    for bad in [
        "<tool_call>{not json}</tool_call>",
        '<tool_call>[{"arguments": {}}]</tool_call>',
        '<tool_call>{"name": "f", "arguments": [1]}</tool_call>',
    ]:
        parsed = parse_tool_calls(bad)
        assert parsed.tool_calls == []
        assert parsed.content == bad
        assert parsed.error and "malformed tool call" in parsed.error


def test_plain_text_is_untouched() -> None:
    assert parse_tool_calls("just text").content == "just text"
    assert parse_tool_calls("just text").error is None


def test_render_is_inverse_of_parse() -> None:
    calls = parse_tool_calls(
        '<tool_call>[{"name": "g", "arguments": {"q": "x"}}]</tool_call>'
    ).tool_calls
    again = parse_tool_calls(render_tool_calls(calls)).tool_calls
    assert canonical_message({"tool_calls": calls}) == canonical_message({"tool_calls": again})


def test_prepare_messages_for_plain_template() -> None:
    tools = [{"type": "function", "function": {"name": "add"}}]
    msgs = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
    ]
    out = prepare_messages(msgs, tools, native=False)
    assert out[0]["role"] == "system" and '"name": "add"' in out[0]["content"]
    assert out[2]["content"] == '<tool_call>[{"name": "add", "arguments": {"a": 1}}]</tool_call>'
    assert out[3] == {"role": "tool", "content": "1"}
    # an existing system prompt is extended, not replaced
    out = prepare_messages([{"role": "system", "content": "Be brief."}, *msgs], tools, native=False)
    assert (
        out[0]["content"].startswith("Be brief.") and sum(m["role"] == "system" for m in out) == 1
    )


def test_canonical_message_ignores_ids_and_argument_spacing() -> None:
    a = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "x", "function": {"name": "f", "arguments": '{"b": 1, "a": 2}'}}],
    }
    b = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "y", "type": "function", "function": {"name": "f", "arguments": '{"a":2,"b":1}'}}
        ],
    }
    assert canonical_message(a) == canonical_message(b)
    assert canonical_message({"role": "user", "content": "x"}) != canonical_message(
        {"role": "user", "content": "y"}
    )


def test_template_tool_support_detection() -> None:
    assert template_supports_tools("{% if tools %}...{% endif %}")
    assert not template_supports_tools("{{ message['content'] }}")
    assert not template_supports_tools(None)
