"""Trinity-RFT's on-policy distillation workflows: the student samples, the teacher (the
first auxiliary model) scores the sampled tokens into ``Experience.teacher_logprobs``.

In the style of Trinity's workflow tests: mock engines for student and teacher (the mock
engine scores tokens with the same made-up log-probs it samples with, so a mock teacher
agrees with a mock student at temperature 1), then, marked slow, SmolLM2-135M as both.
"""

from __future__ import annotations

import asyncio
import importlib

import pytest
import torch

from reinforge import WORKFLOWS, Task
from reinforge.core import FormatConfig, GenerationConfig
from reinforge.models import MockEngine, ModelWrapper
from reinforge.workflows import OnPolicyDistillMathWorkflow, OnPolicyDistillWorkflow
from reinforge.workflows.distill import final_answer


def make_task(workflow: str, temperature: float | None = None, **raw: str) -> Task:
    return Task(
        workflow=workflow,
        format_args=FormatConfig(prompt_key="question", response_key="answer"),
        rollout_args=GenerationConfig(n=1, temperature=1.0),
        workflow_args={} if temperature is None else {"temperature": temperature},
        raw_task=raw or {"question": "What is 2 + 2?", "answer": "4"},
        repeat_times=3,
    )


def run(workflow: OnPolicyDistillWorkflow, repeat: int = 3, base: int = 0):
    workflow.set_repeat_times(repeat, run_id_base=base)
    return asyncio.run(workflow.run_async())


def test_registered_under_trinity_names_and_import_path() -> None:
    assert WORKFLOWS.get("on_policy_distill_workflow") is OnPolicyDistillWorkflow
    assert WORKFLOWS.get("on_policy_distill_math_workflow") is OnPolicyDistillMathWorkflow
    module = importlib.import_module(
        "reinforge.trinity.common.workflows.on_policy_distill_workflow"
    )
    for name in (
        "OnPolicyDistillWorkflow",
        "AsyncOnPolicyDistillWorkflow",
        "OnPolicyDistillMathWorkflow",
        "AsyncOnPolicyDistillMathWorkflow",
    ):
        assert hasattr(module, name), name
    assert module.AsyncOnPolicyDistillWorkflow.is_async
    cls = OnPolicyDistillWorkflow
    assert cls.is_async and cls.can_reset and cls.can_repeat


def test_teacher_scores_every_sampled_reply() -> None:
    student = ModelWrapper(MockEngine(replies=["four", "it is 4", "5"]))
    teacher = ModelWrapper(MockEngine())
    workflow = make_task("on_policy_distill_workflow").to_workflow(student, [teacher])
    assert workflow.teacher_model is teacher
    exps = run(workflow, repeat=3, base=10)
    assert len(exps) == 3
    assert sorted(e.eid.run for e in exps) == [10, 11, 12]
    for exp in exps:
        expected = teacher.logprobs(exp.tokens)[exp.prompt_length - 1 :]
        assert exp.teacher_logprobs.dtype == torch.float32
        assert torch.equal(exp.teacher_logprobs, expected)
        assert len(exp.teacher_logprobs) == exp.response_length == len(exp.logprobs)
        assert exp.reward == 0.0  # no reward function: the teacher is the signal
        # the mock teacher scores tokens as the mock student sampled them
        assert exp.metrics["kl_divergence"] == pytest.approx(0.0, abs=1e-6)
    assert [e.response_text for e in sorted(exps, key=lambda e: e.eid.run)] == [
        "four",
        "it is 4",
        "5",
    ]


def test_teacher_temperature_comes_from_workflow_args() -> None:
    """Trinity's ``workflow_args.temperature``: the teacher's log-probs of ``logits / T``
    (the mock engine divides its made-up log-probs by T)."""
    student = ModelWrapper(MockEngine(replies=["four"]))
    teacher = ModelWrapper(MockEngine())
    workflow = make_task("on_policy_distill_workflow", temperature=0.5).to_workflow(
        student, [teacher]
    )
    (exp,) = run(workflow, repeat=1)
    torch.testing.assert_close(exp.teacher_logprobs, 2.0 * exp.logprobs)
    kl = float((exp.logprobs - exp.teacher_logprobs).sum())
    assert exp.metrics["kl_divergence"] == pytest.approx(kl)
    assert kl > 0  # the teacher at T = 0.5 is less sure of these made-up log-probs


def test_reset_takes_the_next_tasks_prompt_and_temperature() -> None:
    student = ModelWrapper(MockEngine(replies=["x"]))
    workflow = make_task("on_policy_distill_workflow").to_workflow(
        student, [ModelWrapper(MockEngine())]
    )
    workflow.reset(make_task("on_policy_distill_workflow", temperature=2.0, question="Q2?"))
    assert workflow.temperature == 2.0
    assert workflow.format_messages() == [{"role": "user", "content": "Q2?"}]


def test_without_a_teacher_the_workflow_says_how_to_declare_one() -> None:
    with pytest.raises(ValueError, match=r"explorer\.auxiliary_models"):
        make_task("on_policy_distill_workflow").to_workflow(ModelWrapper(MockEngine()))


def test_a_teacher_with_another_tokenization_is_refused() -> None:
    class ShortTeacher:
        """A teacher whose scores do not line up with the student's tokens."""

        def get_openai_client(self):
            return self

        async def logprobs_async(self, tokens, temperature=None):
            return torch.zeros(len(tokens) - 2)

    workflow = make_task("on_policy_distill_workflow").to_workflow(
        ModelWrapper(MockEngine(replies=["four"])), [ShortTeacher()]
    )
    with pytest.raises(ValueError, match="share the student's tokenizer"):
        run(workflow, repeat=1)


def test_math_workflow_uses_qwen_math_prompt_and_scores_accuracy() -> None:
    student = ModelWrapper(MockEngine(replies=["so \\boxed{18}", "\\boxed{17}"]))
    task = make_task(
        "on_policy_distill_math_workflow",
        question="Janet has 3 apples and buys 15 more. How many?",
        answer="3 + 15 = 18\n#### 18",  # GSM8K's answer format
    )
    workflow = task.to_workflow(student, [ModelWrapper(MockEngine())])
    assert workflow.format_messages() == [
        {"role": "system", "content": "You are a helpful assistant."},
        {
            "role": "user",
            "content": "Janet has 3 apples and buys 15 more. How many?\n"
            "Please reason step by step, and put your final answer within \\boxed{}.",
        },
    ]
    exps = sorted(run(workflow, repeat=2), key=lambda e: e.eid.run)
    assert [e.reward for e in exps] == [1.0, 0.0]
    assert [e.metrics["accuracy"] for e in exps] == [1.0, 0.0]
    assert all(e.teacher_logprobs is not None for e in exps)


def test_final_answer_reads_gsm8k_answers() -> None:
    assert final_answer("reasoning\n#### 1,234") == "1,234"
    assert final_answer("42") == "42"
    assert final_answer("\\frac{3}{4}") == "\\frac{3}{4}"


# ---- SmolLM2-135M as student and teacher -------------------------------------------------


@pytest.mark.slow
def test_real_model_teacher_at_temperature_one_matches_the_student(real_model_path) -> None:
    """The same SmolLM2-135M weights as student (sampling, hf engine) and teacher (scoring
    the sampled tokens): the teacher's log-probs are the student's own, up to the float
    noise of a batched forward against incremental decoding; at temperature 0.5 they
    are not."""
    from reinforge.models.engines.hf import HFEngine, load_causal_lm

    model, tokenizer = load_causal_lm(real_model_path, "cpu", torch.float32)
    with HFEngine(model=model, tokenizer=tokenizer, device="cpu", seed=0) as engine:
        wrapper = ModelWrapper(engine)
        task = make_task("on_policy_distill_workflow", question="Name a colour.")
        task.rollout_args.max_tokens = 12
        exps = run(task.to_workflow(wrapper, [wrapper]), repeat=2)
        sharp_task = make_task("on_policy_distill_workflow", 0.5, question="Name a colour.")
        sharp_task.rollout_args.max_tokens = 12
        sharp = run(sharp_task.to_workflow(wrapper, [wrapper]), repeat=2)
    for exp in exps:
        assert exp.response_length > 0
        torch.testing.assert_close(exp.teacher_logprobs, exp.logprobs, atol=2e-3, rtol=0)
        assert abs(exp.metrics["kl_divergence"]) < 1e-2
    gaps = torch.cat([(e.teacher_logprobs - e.logprobs).abs() for e in sharp])
    assert float(gaps.max()) > 0.1
