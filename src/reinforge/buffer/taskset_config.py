"""Configuration of one taskset (the ``buffer.explorer_input.taskset`` YAML section)."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, Field, model_validator

from reinforge.core import FormatConfig, GenerationConfig
from reinforge.core.strict_model import StrictModel


class FormatSection(StrictModel):
    """Which row keys hold the prompt and the reference answer, plus prompt dressing."""

    prompt_key: str = "prompt"
    response_key: str | None = "response"
    messages_key: str = "messages"
    system_prompt: str | None = None
    system_prompt_key: str | None = None
    reply_prefix: str | None = None
    prompt_template: str | None = Field(
        None, description="user message; '{prompt}' is replaced by the row's prompt"
    )
    chat_template: str | None = None
    tools_key: str = "tools"
    image_key: str | None = Field(
        None, description="the row's image(s) for the multimodal workflows (default 'image')"
    )
    video_key: str | None = Field(
        None, description="the row's video(s) for the multimodal workflows (default 'video')"
    )

    def to_format_config(self) -> FormatConfig:
        return FormatConfig(**self.model_dump())


#: the public name the ``rollout_args`` section once had as a type of its own; the
#: section is validated as the core ``GenerationConfig`` itself (see its module)
RolloutArgs = GenerationConfig


class ReasoningGymSource(StrictModel):
    """A procedurally generated taskset from the ``reasoning-gym`` package (offline)."""

    name: str
    size: int = Field(100, ge=1)
    seed: int = 42
    config: dict[str, Any] = Field(default_factory=dict)


class DataSelectorConfig(StrictModel):
    """Which tasks each explore step reads (Trinity-RFT's ``data_selector`` section).

    ``sequential`` (the default) is the taskset's order; ``shuffle``, ``random``,
    ``offline_easy2hard`` (by ``feature_keys``, higher = easier) and
    ``difficulty_based`` (by measured pass rates; see
    :class:`reinforge.buffer.task_selectors.DifficultyBasedSelector`) are the others;
    a dotted path names a user's selector class.
    """

    selector_type: str = "sequential"
    seed: int = 42
    feature_keys: list[str] = Field(
        default_factory=list, description="row columns the selector reads (difficulty features)"
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict,
        description="selector options, e.g. difficulty_based's target_reward, tau, m, lamb, rho",
    )


class TasksetConfig(StrictModel):
    """One taskset: where rows come from and how each row becomes a Task."""

    name: str = "taskset"
    path: str | None = None
    split: str | None = Field(
        None,
        description="the split of a dataset folder to read; unset: 'train' for a training "
        "taskset, the only split for an eval taskset",
    )
    subset_name: str | None = Field(
        None, description="the config (subset) of a dataset folder whose README declares several"
    )
    reasoning_gym: ReasoningGymSource | None = None
    format: FormatSection = Field(default_factory=FormatSection)
    rollout_args: GenerationConfig = Field(default_factory=GenerationConfig)
    default_workflow_type: str | None = Field(None, alias="default_workflow")
    default_reward_fn_type: str | None = Field(None, alias="default_reward_fn")
    workflow_args: dict[str, Any] = Field(default_factory=dict)
    reward_fn_args: dict[str, Any] = Field(default_factory=dict)
    repeat_times: int = Field(1, ge=1)
    limit: int | None = Field(None, ge=1, description="use only the first N rows")
    shuffle: bool = False
    seed: int = 42
    strict: bool = Field(False, description="stop on a malformed row instead of skipping it")
    is_eval: bool = False
    data_selector: DataSelectorConfig | None = Field(
        None,
        # Trinity-RFT 0.3.2 to 0.5.1 named this section task_selector
        validation_alias=AliasChoices("data_selector", "task_selector"),
        description="the order tasks are read in (training taskset only: refused on an eval "
        "taskset); unset: in order",
    )

    @model_validator(mode="after")
    def _one_source(self) -> TasksetConfig:
        if (self.path is None) == (self.reasoning_gym is None):
            raise ValueError("set exactly one of 'path' or 'reasoning_gym'")
        if self.is_eval and self.data_selector is not None:
            raise ValueError(_EVAL_SELECTOR.format(where="data_selector"))
        return self


_EVAL_SELECTOR = (
    "{where}: an eval taskset takes no data_selector (every task is evaluated each time, "
    "in order; a selector would be silently ignored); remove it, or set it on "
    "buffer.explorer_input.taskset"
)


def refuse_eval_selectors(tasksets: list[TasksetConfig]) -> list[TasksetConfig]:
    """``tasksets`` (the eval tasksets) unchanged, or a ValueError naming the first that
    sets ``data_selector``: the evaluation reads every task, so a selector there would
    be ignored, and a config that says otherwise should not run."""
    for index, taskset in enumerate(tasksets):
        if taskset.data_selector is not None:
            where = f"eval_tasksets[{index}] ({taskset.name!r}).data_selector"
            raise ValueError(_EVAL_SELECTOR.format(where=where))
    return tasksets
