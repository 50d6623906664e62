r"""The evaluator of ``arith_flow``: the last ``\boxed{}`` of the answer against the row's.

An ``@rllm.evaluator`` function gets the taskset row (``task["answer"]``), as rLLM's
trainer hands it one; it returns an ``EvalOutput`` whose reward trains every step of
the episode and whose signals are logged as metrics.
"""

from __future__ import annotations

import re

import reinforge.rllm as rllm
from reinforge.rllm.eval.types import EvalOutput, Signal
from reinforge.rllm.types import Episode

BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


@rllm.evaluator
def arith_evaluator(task: dict, episode: Episode) -> EvalOutput:
    found = BOXED.findall(str(episode.artifacts.get("answer", "")))
    answer = found[-1].strip() if found else None
    correct = answer is not None and answer == str(task["answer"]).strip()
    return EvalOutput(
        reward=1.0 if correct else 0.0,
        is_correct=correct,
        signals=[Signal(name="boxed", value=float(answer is not None))],
        metadata={"answer": answer},
    )
