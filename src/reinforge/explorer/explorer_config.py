"""The ``explorer`` config section: concurrency, timeouts, retries."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from reinforge.core.strict_model import StrictModel
from reinforge.models.auxiliary.config import AuxiliaryModelConfig


class RolloutModelConfig(StrictModel):
    """How the rollout model is presented to workflows (Trinity's ``explorer.rollout_model``)."""

    enable_history: bool = Field(
        False,
        description="record every model call so workflows can call "
        "model.extract_experience_from_history() (needed by step-wise workflows)",
    )
    history_shape: Literal["turn", "conversation"] = Field(
        "turn",
        description="what extract_experience_from_history() returns: one experience per "
        "model call ('turn') or one per multi-turn conversation with the tokens between "
        "turns masked out ('conversation')",
    )


class DynamicSamplingConfig(StrictModel):
    """Explore more of the taskset within a step until it holds enough groups that teach.

    DAPO's dynamic sampling: after the experience pipeline (whose ``reward_std_filter``
    drops groups whose rewards are all equal) a step that kept fewer than
    ``min_groups`` task groups explores the next ``batch_size`` tasks too, up to
    ``max_batches`` batches; the step stores and trains on every group kept. A step
    never goes past the end of an epoch, so the run may take fewer steps than planned.
    """

    min_groups: int = Field(
        ge=1, description="task groups the pipeline must keep before a step stops exploring"
    )
    max_batches: int = Field(
        4, ge=1, description="batches of batch_size tasks a step explores at most"
    )


class ExplorerConfig(StrictModel):
    runner_concurrency: int = Field(16, ge=1, description="workflows running at once")
    max_timeout: float = Field(600.0, gt=0, description="seconds per task attempt")
    max_retry_times: int = Field(1, ge=0)
    default_workflow_type: str | None = None
    default_reward_fn_type: str | None = None
    eval_interval: int | None = Field(None, ge=1, description="evaluate every N steps (run mode)")
    eval_on_start: bool = Field(True, description="evaluate before the first step (run mode)")
    rollout_model: RolloutModelConfig = Field(default_factory=RolloutModelConfig)
    dynamic_sampling: DynamicSamplingConfig | None = Field(
        None,
        description="explore further batches within a step until the experience pipeline "
        "kept min_groups task groups (null: one batch per step)",
    )
    auxiliary_models: list[AuxiliaryModelConfig] = Field(
        default_factory=list,
        description="judges, reward models and tools next to the policy (never trained)",
    )

    @field_validator("auxiliary_models")
    @classmethod
    def _unique_names(cls, models: list[AuxiliaryModelConfig]) -> list[AuxiliaryModelConfig]:
        names = [m.name for m in models]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"auxiliary model names must be unique; repeated: {repeated}")
        return models
