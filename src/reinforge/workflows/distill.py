"""On-policy distillation workflows (Trinity-RFT's ``on_policy_distill_workflow`` and
``on_policy_distill_math_workflow``).

The student (the model being trained) samples ``n`` replies to the task's prompt; the
teacher, the first auxiliary model (``explorer.auxiliary_models``), scores the sampled
tokens; the teacher's log-probability of every reply token is stored on the experience
as ``teacher_logprobs``. The ``on_policy_distill`` algorithm then trains each token
with advantage ``kl_coef · (log π_teacher − log π_student)``
(``reinforge.algorithms.advantage.on_policy_distill``).

The teacher must share the student's tokenizer: it scores the student's token ids.
``workflow_args.temperature`` (default 1) is the temperature of the teacher's
log-probs (those of ``logits / temperature``), as in Trinity-RFT; engines ``hf`` and
``mock`` take any, a served teacher (``openai``, ``vllm``) only 1.

As in Trinity-RFT, the plain workflow needs no reward function: every reply's reward
is ``compute_reward(response)``, 0.0 unless a subclass overrides it; the math workflow
scores math accuracy against the task's answer (recorded, not trained on). Each
experience's ``metrics["kl_divergence"]`` is the sum over its reply of
``log π_student − log π_teacher`` (the sampler's log-probs against the teacher's).
"""

from __future__ import annotations

import asyncio
from typing import Any

import torch

from reinforge.core import Experience, Task
from reinforge.rewards.math_check import match_score
from reinforge.workflows.simple import BaseSimpleWorkflow
from reinforge.workflows.workflow import WORKFLOWS

#: Trinity-RFT's Qwen2.5-Math prompt of ``on_policy_distill_math_workflow``
MATH_SYSTEM_PROMPT = "You are a helpful assistant."
MATH_USER_SUFFIX = "\nPlease reason step by step, and put your final answer within \\boxed{}."


@WORKFLOWS.register_module("on_policy_distill_workflow")
class OnPolicyDistillWorkflow(BaseSimpleWorkflow):
    """The student samples, the teacher (``auxiliary_model_wrappers[0]``) scores the
    sampled tokens into ``Experience.teacher_logprobs``; reward ``compute_reward``.

    The prompt is built as the simple workflow's (system prompt, the task's prompt
    through ``format.prompt_template``, reply prefix). A taskset's reward function is
    not called (as in Trinity-RFT); override ``compute_reward`` to score replies.
    """

    is_async = True
    can_reset = True
    can_repeat = True
    needs_reward_fn = False

    def __init__(
        self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None
    ) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        if not self.auxiliary_models:
            raise ValueError(
                f"{type(self).__name__} needs a teacher: on-policy distillation scores the "
                "student's replies with the first auxiliary model, and none was given; "
                "declare the teacher under explorer.auxiliary_models (same tokenizer as "
                "the student)"
            )
        self.teacher_model = self.auxiliary_model_wrappers[0]

    def reset(self, task: Task) -> None:
        super().reset(task)
        self.temperature = float((task.workflow_args or {}).get("temperature", 1.0))

    def compute_reward(self, response: Experience) -> float:
        """The reply's reward: 0.0 here, as the advantage comes from the teacher's
        log-probs; subclasses score replies (``OnPolicyDistillMathWorkflow``)."""
        return 0.0

    async def teacher_logprobs(self, response: Experience) -> torch.Tensor:
        """The teacher's log-probs of ``response``'s reply tokens (one per token)."""
        scored = await self.teacher_model.logprobs_async(
            tokens=response.tokens.tolist(), temperature=self.temperature
        )
        reply = torch.as_tensor(scored, dtype=torch.float32)[response.prompt_length - 1 :]
        if len(reply) != response.response_length:
            raise ValueError(
                f"the teacher returned {len(reply)} log-probs for a reply of "
                f"{response.response_length} tokens (tokens={len(response.tokens)}, "
                f"prompt_length={response.prompt_length}): does it share the student's "
                "tokenizer?"
            )
        return reply

    async def run_async(self) -> list[Experience]:
        responses = await self.model.chat_async(self.format_messages(), **self.chat_kwargs())
        # the teacher scores all replies at once (its engine batches them)
        scored = await asyncio.gather(*(self.teacher_logprobs(r) for r in responses))
        for i, (response, teacher) in enumerate(zip(responses, scored, strict=True)):
            response.teacher_logprobs = teacher
            response.reward = self.compute_reward(response)
            response.eid.run = self.run_id_base + i
            if response.logprobs is not None:
                kl = (response.logprobs - teacher).sum()
                response.metrics["kl_divergence"] = float(kl)
        return responses


class AsyncOnPolicyDistillWorkflow(OnPolicyDistillWorkflow):
    """Trinity-RFT's alias of ``OnPolicyDistillWorkflow`` (which is async already; as
    upstream, registered under no name of its own)."""


@WORKFLOWS.register_module("on_policy_distill_math_workflow")
class OnPolicyDistillMathWorkflow(OnPolicyDistillWorkflow):
    """On-policy distillation with Trinity-RFT's Qwen2.5-Math prompt: system "You are a
    helpful assistant.", the question followed by "Please reason step by step, and put
    your final answer within \\boxed{}.". The reward is the reply's math accuracy
    against the task's answer (``metrics["accuracy"]``), for monitoring: the
    ``on_policy_distill`` algorithm does not train on it. A GSM8K answer is compared by
    its final line (``#### 42``)."""

    def format_messages(self) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": MATH_SYSTEM_PROMPT},
            {"role": "user", "content": f"{self.task_desc}{MATH_USER_SUFFIX}"},
        ]

    def compute_reward(self, response: Experience) -> float:
        if not response.response_text or not self.truth:
            return 0.0
        accuracy = match_score(
            final_answer(str(self.truth)), response.response_text, prediction_is_answer=False
        )
        response.metrics["accuracy"] = accuracy
        return accuracy


class AsyncOnPolicyDistillMathWorkflow(OnPolicyDistillMathWorkflow):
    """Trinity-RFT's alias of ``OnPolicyDistillMathWorkflow`` (which is async already)."""


def final_answer(truth: str) -> str:
    """A reference answer's final value: what follows GSM8K's last ``####``, else all of it."""
    _, sep, tail = truth.rpartition("####")
    return tail.strip() if sep and tail.strip() else truth
