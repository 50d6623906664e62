"""An agent written only against the OpenAI SDK, trained by reinforge.

The agent answers an arithmetic question, is asked to check its answer, and replies
again: two chat turns through ``openai.OpenAI``. Nothing in ``run`` knows about
tokens. reinforge hands the workflow an in-process OpenAI client whose calls are
recorded; ``extract_experience_from_history(shape="conversation")`` then returns one
experience per conversation holding the exact sampled tokens of both replies (the
check-your-answer message between them is masked out of the loss).

The config names this file under ``plugins`` so the ``@WORKFLOWS.register_module``
line below runs before the run starts.
"""

from __future__ import annotations

import re
from typing import Any

import openai

from reinforge.core import Experience, Task
from reinforge.workflows import WORKFLOWS, Workflow

CHECK = "Check your answer. Reply with just the final number."


@WORKFLOWS.register_module("self_check_arithmetic_agent")
class SelfCheckArithmeticAgent(Workflow):
    def __init__(self, *, task: Task, model: Any, auxiliary_models: Any = None) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.client: openai.OpenAI = model.get_openai_client()
        self.question = task.raw_task["question"]
        self.answer = str(task.raw_task["answer"])
        self.sampling = {
            "temperature": task.rollout_args.temperature,
            "max_tokens": task.rollout_args.max_tokens or 32,
        }

    def ask(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        response = self.client.chat.completions.create(
            model=self.client.model_path, messages=messages, **self.sampling
        )
        return response.choices[0].message.model_dump(exclude_none=True)

    def reward(self, final_reply: str) -> float:
        numbers = re.findall(r"-?\d+", final_reply)
        return float(bool(numbers) and numbers[-1] == self.answer)

    def run(self) -> list[Experience]:
        messages = [{"role": "user", "content": f"{self.question} Answer with just the number."}]
        messages.append(self.ask(messages))
        messages.append({"role": "user", "content": CHECK})
        final = self.ask(messages)
        reward = self.reward(final.get("content") or "")
        experiences = self.model.extract_experience_from_history(shape="conversation")
        for exp in experiences:
            exp.reward = reward
            exp.metrics["accuracy"] = reward
        return experiences
