"""MultiTurnWorkflow: conversations become token-exact experiences from the sampled turns."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future
from typing import Any

import pytest

from reinforge.core import Experience, Task
from reinforge.models import ModelWrapper
from reinforge.models.engine import Completion, SamplingParams, done_future
from reinforge.models.engines.mock import MockEngine
from reinforge.workflows import MultiTurnWorkflow
from reinforge.workflows.multi_turn import merge_turns, split_chains


def _turn(tokens: list[int], prompt_length: int, logprob: float) -> Experience:
    n = len(tokens) - prompt_length
    return Experience(
        tokens=tokens,
        prompt_length=prompt_length,
        logprobs=[logprob] * n,
        response_text=f"r{logprob}",
        info={"model_version": int(-logprob * 10)},
    )


def test_merge_keeps_every_turn_exact_and_masks_the_glue() -> None:
    t1 = _turn([1, 2, 3, 10, 11], 3, -0.1)  # prompt 1 2 3, reply 10 11
    t2 = _turn([1, 2, 3, 10, 11, 7, 8, 20], 7, -0.2)  # glue 7 8, reply 20
    t3 = _turn([1, 2, 3, 10, 11, 7, 8, 20, 9, 30, 31], 9, -0.3)  # glue 9, reply 30 31
    (chain,) = split_chains([t1, t2, t3])
    exp = merge_turns(chain)
    assert exp.tokens.tolist() == t3.tokens.tolist()
    assert exp.prompt_length == 3
    assert exp.action_mask.int().tolist() == [1, 1, 0, 0, 1, 0, 1, 1]
    assert exp.logprobs.tolist() == pytest.approx([-0.1, -0.1, 0, 0, -0.2, 0, -0.3, -0.3])
    assert exp.experience_type == "multi_turn"
    assert exp.info["turns"] == 3
    assert exp.info["model_version"] == 1  # the first (oldest) turn's policy


def test_a_turn_that_does_not_extend_the_previous_starts_a_new_chain() -> None:
    t1 = _turn([1, 2, 3, 10], 3, -0.1)
    t2 = _turn([1, 2, 3, 10, 5, 20], 5, -0.2)
    t3 = _turn([1, 2, 4, 10, 5, 20, 6, 30], 7, -0.3)  # earlier tokens changed (edited history)
    t4 = _turn([1, 2, 3, 10, 5, 20], 4, -0.4)  # its prompt ends inside t2's reply
    chains = split_chains([t1, t2, t3, t4])
    assert [len(c) for c in chains] == [2, 1, 1]


class ScriptedAgent(MultiTurnWorkflow):
    """Asks three questions in one conversation, then scores 1."""

    def run(self) -> list[Experience]:
        messages = [{"role": "system", "content": "be brief"}]
        for q in ("one?", "two?", "three?"):
            messages.append({"role": "user", "content": q})
            reply = self.get_model_response_text(messages)
            messages.append({"role": "assistant", "content": reply})
        messages.append({"role": "user", "content": "thanks"})  # after the last reply: ignored
        return [self.process_messages_to_experience(messages, 1.0, {"turns_asked": 3, "tag": "x"})]


def _mock_model(**kwargs: Any) -> ModelWrapper:
    return ModelWrapper(MockEngine(replies={"three": "C", "two": "B", "one": "A"}), **kwargs)


def test_conversation_becomes_one_experience_with_masked_observations() -> None:
    model = _mock_model()
    (exp,) = ScriptedAgent(task=Task(), model=model).run()
    text = model.tokenizer.decode(exp.tokens.tolist(), skip_special_tokens=False)
    assert text.count("<|im_start|>assistant") == 3
    masked = [
        t for t, m in zip(exp.response_tokens.tolist(), exp.action_mask.tolist(), strict=True) if m
    ]
    assert (
        model.tokenizer.decode(masked, skip_special_tokens=False)
        == "A<|im_end|>B<|im_end|>C<|im_end|>"
    )
    assert exp.reward == 1.0
    assert exp.metrics["turns_asked"] == 3.0 and "tag" not in exp.metrics
    assert exp.info["tag"] == "x" and exp.info["segments"] == 1
    assert exp.messages[-1] == {"role": "user", "content": "thanks"}
    assert exp.response_text == "A\nB\nC"


class OddTokens(MockEngine):
    """Samples each character as its own token: ids that re-tokenizing the text would not give."""

    def submit(self, prompt_ids: list[int], params: SamplingParams) -> Future[list[Completion]]:
        text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        reply = "Left" if text.count("<|im_start|>assistant") == 1 else "Right"
        ids = [self.tokenizer.encode(ch)[0] for ch in reply] + [self.tokenizer.eos_token_ids[0]]
        lps = [-0.5 - i / 100 for i in range(len(ids))]
        return done_future([Completion(ids, lps, "stop", None)])


def test_sampled_ids_are_kept_not_retokenized(tiny_model_path: Any) -> None:
    from transformers import AutoTokenizer

    from reinforge.models.tokenizer import HFChatTokenizer

    tok = HFChatTokenizer(AutoTokenizer.from_pretrained(tiny_model_path, local_files_only=True))
    assert tok.encode("Left") != [tok.encode(ch)[0] for ch in "Left"]  # the premise
    model = ModelWrapper(OddTokens(tokenizer=tok))

    class TwoTurns(MultiTurnWorkflow):
        def run(self) -> list[Experience]:
            messages = [{"role": "user", "content": "go"}]
            for _ in range(2):
                reply = self.get_model_response_text(messages)
                messages += [
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": "again"},
                ]
            return self.process_messages_to_experiences(messages, 0.5)

    (exp,) = TwoTurns(task=Task(), model=model).run()
    sampled = [
        t for t, m in zip(exp.response_tokens.tolist(), exp.action_mask.tolist(), strict=True) if m
    ]
    left = [tok.encode(ch)[0] for ch in "Left"]
    right = [tok.encode(ch)[0] for ch in "Right"]
    eos = tok.eos_token_ids[0]
    assert sampled == [*left, eos, *right, eos]
    assert exp.logprobs[exp.action_mask].tolist() == pytest.approx(
        [-0.5 - i / 100 for i in range(5)] + [-0.5 - i / 100 for i in range(6)]
    )
    assert not bool(exp.action_mask.all())  # the user turn between is masked out


def test_async_helpers_record_turns() -> None:
    class AsyncAgent(MultiTurnWorkflow):
        is_async = True

        async def run_async(self) -> list[Experience]:
            messages = [{"role": "user", "content": "one?"}]
            reply = await self.get_model_response_text_async(messages)
            messages.append({"role": "assistant", "content": reply})
            messages.append({"role": "user", "content": "two?"})
            (turn,) = await self.get_model_response_async(messages)
            messages.append({"role": "assistant", "content": turn.response_text})
            return self.process_messages_to_experiences(messages, 0.0)

    (exp,) = asyncio.run(AsyncAgent(task=Task(), model=_mock_model()).run_async())
    assert exp.info["turns"] == 2 and exp.response_text == "A\nB"


def test_bad_uses_fail_clearly() -> None:
    wf = ScriptedAgent(task=Task(), model=_mock_model())
    with pytest.raises(ValueError, match="no assistant message"):
        wf.process_messages_to_experience([{"role": "user", "content": "hi"}], 1.0)
    wf.get_model_response([{"role": "user", "content": "one?"}])
    with pytest.raises(ValueError, match="do not continue"):
        wf.process_messages_to_experience([{"role": "user", "content": "another talk"}], 1.0)
    with pytest.raises(ValueError, match="n must be 1"):
        wf.get_model_response([{"role": "user", "content": "one?"}], n=2)


def test_edited_conversation_gives_one_experience_per_exact_stretch() -> None:
    class Forgetful(MultiTurnWorkflow):
        def run(self) -> list[Experience]:
            first = [{"role": "user", "content": "one?"}]
            reply = self.get_model_response_text(first)
            # drops the first exchange before asking again: not a continuation
            second = [{"role": "user", "content": "two?"}]
            reply2 = self.get_model_response_text(second)
            return self.process_messages_to_experiences(
                [*second, {"role": "assistant", "content": reply2}], 1.0, {"first": reply}
            )

    wf = Forgetful(task=Task(), model=_mock_model())
    exps = wf.run()
    assert len(exps) == 2
    assert all(e.info["segments"] == 2 and e.reward == 1.0 for e in exps)
    assert all(bool(e.action_mask.all()) for e in exps)
    wf.get_model_response([{"role": "user", "content": "one?"}])
    wf.get_model_response([{"role": "user", "content": "two?"}])
    with pytest.raises(ValueError, match="breaks into 2"):
        wf.process_messages_to_experience(
            [{"role": "user", "content": "two?"}, {"role": "assistant", "content": "B"}], 1.0
        )


def test_context_full_reflects_the_engine_window() -> None:
    model = ModelWrapper(
        MockEngine(default_reply="x" * 40, max_model_len=300), default_max_tokens=64
    )
    wf = ScriptedAgent(task=Task(), model=model)
    assert not wf.context_full("anything")  # nothing sampled yet
    wf.get_model_response([{"role": "user", "content": "q" * 10}])
    used = wf.turns[-1].tokens.shape[0]  # byte tokens: 10 + template + 41 sampled
    room = 300 - used - 64 - 32  # window - used - reply budget - template margin
    assert not wf.context_full("o" * room)
    assert wf.context_full("o" * (room + 1))
