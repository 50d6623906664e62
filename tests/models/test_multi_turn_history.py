"""Multi-turn conversations keep the exact sampled ids; history gives turn or conversation shape."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch

from reinforge.models.engine import Completion, done_future
from reinforge.models.engines.hf import HFEngine
from reinforge.models.engines.mock import MockEngine, fake_logprob
from reinforge.models.model_wrapper import ModelWrapper
from reinforge.models.tokenizer import HFChatTokenizer

TOOLS = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]


class CharTokenEngine(MockEngine):
    """Scripted replies sampled one character per token: a valid tokenization that the
    tokenizer itself would never produce, so any re-tokenization of a reply shows."""

    def submit(self, prompt_ids, params):
        out = []
        for comp in super().submit(prompt_ids, params).result():
            text = self.tokenizer.decode(comp.token_ids[:-1])
            ids = [t for ch in text for t in self.tokenizer.encode(ch)]
            ids.append(comp.token_ids[-1])
            lps = [fake_logprob(t, len(prompt_ids) + i) for i, t in enumerate(ids)]
            out.append(Completion(ids, lps, comp.finish_reason))
        return done_future(out)


@pytest.fixture(scope="module")
def smol_tokenizer(tiny_model_path: Path) -> HFChatTokenizer:
    from transformers import AutoTokenizer

    return HFChatTokenizer(AutoTokenizer.from_pretrained(str(tiny_model_path)))


def test_second_turn_extends_the_first_turns_tokens() -> None:
    model = ModelWrapper(MockEngine(replies=["first", "second"]), enable_history=True)
    msgs = [{"role": "user", "content": "hi"}]
    (a,) = model.chat(msgs)
    msgs += [{"role": "assistant", "content": a.response_text}, {"role": "user", "content": "more"}]
    (b,) = model.chat(msgs)
    assert b.tokens[: len(a.tokens)].tolist() == a.tokens.tolist()
    assert b.info["parent_turn_id"] == a.info["turn_id"]
    turns = model.extract_experience_from_history(clear_history=False)
    assert [t.info["turn_id"] for t in turns] == [a.info["turn_id"], b.info["turn_id"]]
    (conv,) = model.extract_experience_from_history(shape="conversation")
    assert conv.tokens.tolist() == b.tokens.tolist()
    assert conv.prompt_length == a.prompt_length
    mask = conv.action_mask.tolist()
    n1 = a.response_length
    glue = b.prompt_length - len(a.tokens)
    assert mask == [True] * n1 + [False] * glue + [True] * b.response_length
    assert conv.logprobs[:n1].tolist() == a.logprobs.tolist()
    assert conv.logprobs[n1 + glue :].tolist() == b.logprobs.tolist()
    assert conv.info["turns"] == 2 and conv.experience_type == "multi_turn"
    assert model.extract_experience_from_history() == []


def test_three_turn_tool_conversation_stores_exactly_the_sampled_ids(smol_tokenizer) -> None:
    replies = iter(
        [
            '<tool_call>[{"name": "add", "arguments": {"a": 2, "b": 3}}]</tool_call>',
            '<tool_call>[{"name": "add", "arguments": {"a": 5, "b": 10}}]</tool_call>',
            "The total is 15.",
        ]
    )
    engine = CharTokenEngine(replies=lambda prompt, i: next(replies), tokenizer=smol_tokenizer)
    model = ModelWrapper(engine, enable_history=True)
    client = model.get_openai_client()
    msgs = [{"role": "user", "content": "What is 2 + 3 + 10?"}]
    sampled, first_prompt = [], None
    for turn in range(3):
        resp = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS)
        choice = resp.choices[0]
        first_prompt = first_prompt or resp.model_extra["prompt_token_ids"]
        sampled.append(choice.model_extra["token_ids"])
        msgs.append(choice.message.model_dump(exclude_none=True))
        if choice.message.tool_calls:
            call = choice.message.tool_calls[0]
            args = json.loads(call.function.arguments)
            msgs.append(
                {"role": "tool", "tool_call_id": call.id, "content": str(args["a"] + args["b"])}
            )
        assert (choice.finish_reason == "tool_calls") == (turn < 2)

    per_turn = model.extract_experience_from_history(clear_history=False)
    assert [t.response_tokens.tolist() for t in per_turn] == sampled
    (conv,) = model.extract_experience_from_history(shape="conversation")
    assert conv.prompt_tokens.tolist() == first_prompt
    response = conv.response_tokens
    kept = response[conv.action_mask].tolist()
    assert kept == [t for ids in sampled for t in ids]
    # each sampled span sits where the model produced it, with tool results between them
    spans, pos = [], 0
    mask = conv.action_mask.tolist()
    while pos < len(mask):
        if mask[pos]:
            end = pos
            while end < len(mask) and mask[end]:
                end += 1
            spans.append(response[pos:end].tolist())
            pos = end
        else:
            pos += 1
    assert spans == sampled
    glue = smol_tokenizer.decode(response[~conv.action_mask].tolist(), skip_special_tokens=False)
    assert "<|im_start|>tool\n5<|im_end|>" in glue and "<|im_start|>tool\n15<|im_end|>" in glue
    # re-tokenizing the replies' text would have given other ids: the check above can fail
    reply_text = smol_tokenizer.decode(sampled[0][:-1])
    assert smol_tokenizer.encode(reply_text) != sampled[0][:-1]


def test_real_model_scores_the_merged_conversation_as_it_sampled_it(tiny_model_path) -> None:
    engine = HFEngine(tiny_model_path, device="cpu")
    try:
        model = ModelWrapper(engine, enable_history=True, history_shape="conversation")
        client = model.get_openai_client()
        msgs = [{"role": "user", "content": "Tell me a story."}]
        for i in range(3):
            resp = client.chat.completions.create(model="m", messages=msgs, max_tokens=12, seed=i)
            msgs += [
                resp.choices[0].message.model_dump(exclude_none=True),
                {"role": "user", "content": f"Go on ({i})."},
            ]
        (conv,) = model.extract_experience_from_history()
        assert conv.info["turns"] == 3
        fresh = model.logprobs(conv.tokens)[conv.prompt_length - 1 :]
        mask = conv.action_mask
        assert torch.allclose(fresh[mask], conv.logprobs[mask], atol=2e-3)
    finally:
        engine.close()


def test_branches_share_their_common_turn() -> None:
    model = ModelWrapper(MockEngine(replies=["root", "left", "right"]), enable_history=True)
    msgs = [{"role": "user", "content": "q"}]
    (root,) = model.chat(msgs)
    base = [*msgs, {"role": "assistant", "content": root.response_text}]
    model.chat([*base, {"role": "user", "content": "a"}])
    model.chat([*base, {"role": "user", "content": "b"}])
    convs = model.extract_experience_from_history(shape="conversation")
    assert len(convs) == 2
    assert all(c.tokens[: len(root.tokens)].tolist() == root.tokens.tolist() for c in convs)


def test_edited_reply_is_rendered_afresh() -> None:
    model = ModelWrapper(MockEngine(replies=["original"]), enable_history=True)
    msgs = [{"role": "user", "content": "q"}]
    model.chat(msgs)
    (b,) = model.chat(
        [*msgs, {"role": "assistant", "content": "edited"}, {"role": "user", "content": "r"}]
    )
    assert "parent_turn_id" not in b.info
    assert len(model.extract_experience_from_history(shape="conversation")) == 2


def test_non_append_only_template_falls_back_to_per_turn(smol_tokenizer, caplog) -> None:
    # keeps only the last user message: earlier turns disappear from later prompts
    template = (
        "{% for m in messages %}{% if m['role'] != 'user' or loop.last %}"
        "{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
        "{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
    )
    engine = MockEngine(replies=["r"], tokenizer=smol_tokenizer)
    model = ModelWrapper(engine, enable_history=True, chat_template=template)
    msgs = [{"role": "user", "content": "q1"}]
    (a,) = model.chat(msgs)
    msgs += [{"role": "assistant", "content": a.response_text}, {"role": "user", "content": "q2"}]
    with caplog.at_level(logging.WARNING, logger="reinforge.models.conversation"):
        (b,) = model.chat(msgs)
        model.chat(
            [
                *msgs,
                {"role": "assistant", "content": b.response_text},
                {"role": "user", "content": "q3"},
            ]
        )
    assert "parent_turn_id" not in b.info
    assert b.prompt_text == model.chat_prompts.render_text(msgs)
    assert len(model.extract_experience_from_history(shape="conversation")) == 3
    assert model.chat_prompts.turns.fallbacks == 2


def test_history_shape_is_validated() -> None:
    with pytest.raises(ValueError, match="history_shape"):
        ModelWrapper(MockEngine(), history_shape="episode")
    model = ModelWrapper(MockEngine(), enable_history=True)
    with pytest.raises(ValueError, match="shape"):
        model.extract_experience_from_history(shape="tree")
    with pytest.raises(RuntimeError, match="enable_history"):
        ModelWrapper(MockEngine()).extract_experience_from_history()
