"""SFT demonstrations: rows checked with file:line errors, tokenized with the real
SmolLM2 chat template and masked to exactly the assistant turns; batches per step."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from reinforge.buffer.sft_batches import SftBatches
from reinforge.buffer.sft_dataset import (
    SftDataError,
    read_conversations,
    tokenize_demonstrations,
)
from reinforge.buffer.sft_dataset_config import SftDatasetConfig
from reinforge.core import Experience

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calc",
            "description": "evaluate an arithmetic expression",
            "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}},
        },
    }
]
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "calc", "arguments": json.dumps({"expr": "123*456"})},
}
TOOL_ROW = {
    "messages": [
        {"role": "system", "content": "Use the calculator."},
        {"role": "user", "content": "What is 123*456?"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "c1", "content": "56088"},
        {"role": "user", "content": "And in words?"},
        {"role": "assistant", "content": "It is 56088."},
    ],
    "tools": TOOLS,
}


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def SftDataset(path: Path, **kw) -> SftDatasetConfig:
    return SftDatasetConfig(path=str(path), **kw)


@pytest.fixture(scope="module")
def chat(tiny_model_path):
    from transformers import AutoTokenizer

    from reinforge.models.tokenizer import HFChatTokenizer
    from reinforge.models.wrapper.chat_prompts import ChatPrompts

    tokenizer = HFChatTokenizer(AutoTokenizer.from_pretrained(tiny_model_path))
    return ChatPrompts(tokenizer, None), tokenizer


def _spans(mask: list[int]) -> list[tuple[int, int]]:
    spans, start = [], None
    for i, bit in enumerate([*mask, 0]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            spans.append((start, i))
            start = None
    return spans


def test_multi_turn_tool_row_is_masked_to_exactly_the_assistant_turns(tmp_path, chat):
    prompts, tokenizer = chat
    path = _write(tmp_path / "d.jsonl", [json.dumps(TOOL_ROW)])
    demos = tokenize_demonstrations(
        read_conversations(SftDatasetConfig(path=str(path))),
        prompts.render_text,
        tokenizer.encode,
        None,
    )
    (exp,) = demos.experiences
    text = prompts.render_text(TOOL_ROW["messages"], TOOLS, False)
    assert exp.tokens.tolist() == tokenizer.encode(text)
    # where each assistant turn starts and ends in the template's text, in tokens
    header, end = "<|im_start|>assistant\n", "<|im_end|>\n"
    expected = []
    at = 0
    for _ in range(2):
        begin = text.index(header, at) + len(header)
        stop = text.index(end, begin) + len(end)
        expected.append((len(tokenizer.encode(text[:begin])), len(tokenizer.encode(text[:stop]))))
        at = stop
    full_mask = [0] * exp.prompt_length + exp.action_mask.int().tolist()
    assert _spans(full_mask) == expected
    assert exp.prompt_length == expected[0][0]
    first, second = (tokenizer.decode(exp.tokens[a:b].tolist(), False) for a, b in expected)
    assert first.startswith("<tool_call>") and "123*456" in first and "56088" not in first
    assert second == "It is 56088.<|im_end|>\n"
    assert exp.logprobs is None and exp.info["source"] == f"{path}:1"


def test_too_long_rows_are_truncated_or_skipped_and_listed(tmp_path, chat):
    prompts, tokenizer = chat
    long_prompt = {"role": "user", "content": "word " * 200}
    rows = [
        TOOL_ROW,
        {"messages": [long_prompt, {"role": "assistant", "content": "ok"}]},
        {
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "x " * 300},
            ]
        },
    ]
    path = _write(tmp_path / "d.jsonl", [json.dumps(r) for r in rows])
    demos = tokenize_demonstrations(
        read_conversations(SftDatasetConfig(path=str(path))),
        prompts.render_text,
        tokenizer.encode,
        200,
    )
    assert demos.skipped == [f"{path}:2"]
    assert demos.truncated == [f"{path}:1", f"{path}:3"]
    assert all(len(e.tokens) == 199 for e in demos.experiences)
    assert all(e.truncate_status == "response_truncated" for e in demos.experiences)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"messages": [{"role": "user", "content": "hi"}', "not valid JSON"),
        ('["not", "an", "object"]', "must be a JSON object"),
        ('{"conversation": []}', "no 'messages' key"),
        ('{"messages": [{"role": "robot", "content": "hi"}]}', "unknown role 'robot'"),
        ('{"messages": [{"role": "user", "content": "hi"}]}', "no assistant message"),
        (
            '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", '
            '"content": "x"}], "tools": "calc"}',
            "'tools' must be a list",
        ),
    ],
)
def test_a_bad_row_is_an_error_naming_file_and_line(tmp_path, line, message):
    good = json.dumps(TOOL_ROW)
    path = _write(tmp_path / "demos.jsonl", [good, "", line, good])
    with pytest.raises(SftDataError, match=message) as info:
        read_conversations(SftDataset(path))
    assert str(info.value).startswith(f"{path}:3: ")


def test_opening_with_an_assistant_turn_is_refused(tmp_path, chat):
    prompts, tokenizer = chat
    row = {"messages": [{"role": "assistant", "content": "hello"}]}
    path = _write(tmp_path / "d.jsonl", [json.dumps(row)])
    with pytest.raises(SftDataError, match=f"{path}:1: the conversation opens with an assistant"):
        tokenize_demonstrations(
            read_conversations(SftDataset(path)), prompts.render_text, tokenizer.encode, None
        )


def test_wrong_file_type_empty_file_and_custom_keys(tmp_path):
    with pytest.raises(SftDataError, match=r"must be a \.jsonl file"):
        read_conversations(SftDataset(tmp_path / "d.json"))
    with pytest.raises(SftDataError, match="no conversations"):
        read_conversations(SftDataset(_write(tmp_path / "e.jsonl", [""])))
    with pytest.raises(SftDataError, match="cannot read"):
        read_conversations(SftDataset(tmp_path / "missing.jsonl"))
    row = {"conv": TOOL_ROW["messages"], "fns": TOOLS}
    path = _write(tmp_path / "k.jsonl", [json.dumps(row)] * 3)
    cfg = SftDataset(path, format={"messages_key": "conv", "tools_key": "fns"}, limit=2)
    rows = read_conversations(cfg)
    assert len(rows) == 2 and rows[0].tools == TOOLS


def _exps(lengths: list[int]) -> list[Experience]:
    return [
        Experience(tokens=list(range(n)), prompt_length=1, info={"i": i})
        for i, n in enumerate(lengths)
    ]


def test_batches_cover_each_row_once_per_epoch_and_are_deterministic():
    exps = _exps([5 + (i * 7) % 23 for i in range(22)])
    batches = SftBatches(exps, 4, seed=3, window=2)
    assert batches.steps_per_epoch == 6 and batches.planned_steps(2, None) == 12
    assert batches.planned_steps(2, 5) == 5
    for epoch in range(2):
        seen = Counter(e.info["i"] for k in range(1, 7) for e in batches.batch(epoch * 6 + k))
        assert seen == Counter(range(22))
    again = SftBatches(exps, 4, seed=3, window=2)
    assert [e.info["i"] for e in batches.batch(9)] == [e.info["i"] for e in again.batch(9)]
    epochs = [[e.info["i"] for k in range(1, 7) for e in batches.batch(s + k)] for s in (0, 6)]
    assert epochs[0] != epochs[1]  # each epoch is shuffled anew


def test_length_bucketing_sorts_within_a_window():
    exps = _exps(list(range(2, 34)))  # 32 rows of distinct lengths
    window = 4  # batches of 2 -> windows of 8 rows
    batches = SftBatches(exps, 2, seed=0, window=window)
    plan = [batches.batch(k) for k in range(1, 17)]
    for batch in plan:
        assert len(batch) == 2
    # each window's 4 batches are consecutive slices of its sorted rows
    for w in range(4):
        rows = sorted(len(e.tokens) for b in plan[w * 4 : w * 4 + 4] for e in b)
        pairs = sorted(tuple(sorted(len(e.tokens) for e in b)) for b in plan[w * 4 : w * 4 + 4])
        assert pairs == [tuple(rows[i : i + 2]) for i in range(0, 8, 2)]
    unsorted = SftBatches(exps, 2, seed=0, window=1, shuffle=False)
    assert [len(e.tokens) for e in unsorted.batch(1)] == [2, 3]
    with pytest.raises(ValueError, match="from 1"):
        batches.batch(0)
