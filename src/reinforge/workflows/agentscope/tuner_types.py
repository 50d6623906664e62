"""What an AgentScope tuner workflow and judge return: ``WorkflowOutput``, ``JudgeOutput``.

AgentScope 1.x shipped these in ``agentscope.tuner``; the 2.0 series, which reinforge
installs, has no tuner package. These dataclasses have the same fields and meaning,
so functions written for the 1.x tuner run unchanged once their import says
``from reinforge.workflows.agentscope import WorkflowOutput, JudgeOutput`` (or
``reinforge.trinity.common.workflows.agentscope_workflow``). Objects of AgentScope's
own classes, where a release has them, are read the same way: by attribute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class WorkflowOutput:
    """The outcome of one run of an agent workflow function.

    ``reward`` is required unless a judge function scores ``response``; ``metrics``
    (numbers) are recorded on the run's last experience.
    """

    reward: float | None = None
    response: Any = None
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class JudgeOutput:
    """A judge function's verdict on a response: the reward, and metrics to record."""

    reward: float
    metrics: dict[str, float] = field(default_factory=dict)
