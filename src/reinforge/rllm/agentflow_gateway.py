"""The model endpoint of AgentFlows (``reinforge.rllm``'s names for it).

Each rollout's endpoint is a session on the one recording server, answered and
recorded by a ``ModelWrapper`` of its own (``reinforge.workflows.agentflow.session``);
the recorded calls are that wrapper's history (``reinforge.workflows.agentflow.calls``).
"""

from reinforge.workflows.agentflow.calls import RecordedCall, recorded_calls
from reinforge.workflows.agentflow.session import (
    SEED_STRIDE,
    RolloutSession,
    SessionModel,
    rollout_session,
)

__all__ = [
    "SEED_STRIDE",
    "RecordedCall",
    "RolloutSession",
    "SessionModel",
    "recorded_calls",
    "rollout_session",
]
