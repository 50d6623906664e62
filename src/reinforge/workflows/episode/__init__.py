"""rLLM-style episode workflows on reinforge.

Code written for rLLM's ``Workflow`` / ``BaseAgent`` / ``BaseEnv`` moves over by
changing imports::

    from reinforge.workflows.episode import (
        BaseAgent, BaseEnv, Episode, Step, TerminationEvent, TerminationReason,
        Trajectory, Workflow,
    )

``Workflow`` here is ``EpisodeWorkflow`` (not ``reinforge.workflows.Workflow``).
Register a subclass with ``@WORKFLOWS.register_module("name")`` and name it in a
taskset like any workflow; ``EpisodeWorkflowAdapter`` runs it in the explorer and
``episode_to_experiences`` turns its episodes into experiences. See
``docs/episode_workflows.md``.
"""

from reinforge.core.episode import (
    Action,
    Episode,
    Step,
    TerminationEvent,
    TerminationReason,
    Trajectory,
)
from reinforge.core.model_output import ModelOutput
from reinforge.workflows.episode.adapter import EpisodeWorkflowAdapter, adapter_for
from reinforge.workflows.episode.agent import BaseAgent
from reinforge.workflows.episode.conversion import (
    ConversionOptions,
    episode_to_experiences,
    episodes_to_experiences,
)
from reinforge.workflows.episode.env import BaseEnv
from reinforge.workflows.episode.reward_adjust import discounted_returns, reward_bonus
from reinforge.workflows.episode.rollout_engine import ModelWrapperEngine, RolloutEngine
from reinforge.workflows.episode.timing import TimingTrackingMixin
from reinforge.workflows.episode.workflow import EpisodeWorkflow, Workflow
from reinforge.workflows.workflow import WORKFLOWS

__all__ = [
    "WORKFLOWS",
    "Action",
    "BaseAgent",
    "BaseEnv",
    "ConversionOptions",
    "Episode",
    "EpisodeWorkflow",
    "EpisodeWorkflowAdapter",
    "ModelOutput",
    "ModelWrapperEngine",
    "RolloutEngine",
    "Step",
    "TerminationEvent",
    "TerminationReason",
    "TimingTrackingMixin",
    "Trajectory",
    "Workflow",
    "adapter_for",
    "discounted_returns",
    "episode_to_experiences",
    "episodes_to_experiences",
    "reward_bonus",
]
