r"""An rLLM 0.3 AgentFlow, written as rLLM's cookbooks write one, trained by reinforge.

The flow solves one arithmetic question in two calls: it asks for the answer in
``\boxed{}``, then asks the model to check that answer and reply with the final one.
Nothing here is reinforge's but the import path: under rLLM the first import reads
``import rllm`` and ``from rllm.types import ...``. The flow builds its own OpenAI
client on ``config.base_url``; reinforge points that at a recording endpoint, so both
calls are trained on token-exact, and the evaluator (``arith_eval.py``) scores the
final answer the flow leaves in ``episode.artifacts["answer"]``.

Run it (see the YAML files beside this one)::

    reinforge explore -c examples/rllm_agentflow/explore_mock.yaml   # mock engine, seconds
    reinforge run -c examples/rllm_agentflow/grpo.yaml               # GRPO, embedded SmolLM2
"""

from __future__ import annotations

from openai import AsyncOpenAI

import reinforge.rllm as rllm
from reinforge.rllm.types import AgentConfig, Episode, Step, Task, Trajectory

SYSTEM = "Solve the arithmetic problem. Give the final result as \\boxed{number}."
CHECK = "Check your work. Reply with the final result as \\boxed{number}."


@rllm.rollout(name="solver")
async def arith_flow(task: Task, config: AgentConfig) -> Episode:
    """Answer, self-check, and hand the last reply to the evaluator."""
    client = AsyncOpenAI(base_url=config.base_url, api_key="EMPTY", max_retries=0)
    question = str(task.metadata.get("question") or task.instruction)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question},
    ]
    steps = []
    for turn in range(2):
        if turn:
            messages.append({"role": "user", "content": CHECK})
        # no sampling arguments: the endpoint applies the taskset's rollout_args
        reply = await client.chat.completions.create(model=config.model, messages=messages)
        content = reply.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": content})
        steps.append(Step(chat_completions=list(messages), model_response=content, action=content))
    answer = steps[-1].model_response
    return Episode(
        trajectories=[Trajectory(name="solver", steps=steps, output=answer)],
        artifacts={"answer": answer},
    )
