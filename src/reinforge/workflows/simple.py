"""Single-turn workflows: one prompt, ``n`` sampled replies, one reward function."""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Mapping
from typing import Any

from reinforge.core import Experience, Task
from reinforge.models.wrapper.sampling_args import rollout_kwargs
from reinforge.rewards.reward_fn import accepted_keywords, call_reward_fn
from reinforge.workflows.workflow import WORKFLOWS, Workflow

# reward class -> (its __init__, whether that takes auxiliary_models)
_AUXILIARY_PARAM: dict[type, tuple[Any, bool]] = {}


def _takes_auxiliary_models(reward_cls: type) -> bool:
    """Whether the class's constructor has an ``auxiliary_models`` parameter. Cached per
    class (while its ``__init__`` stays the same): ``inspect.signature`` costs about as
    much as the rest of setting up a task."""
    init = reward_cls.__init__
    cached = _AUXILIARY_PARAM.get(reward_cls)
    if cached is not None and cached[0] is init:
        return cached[1]
    try:
        takes = "auxiliary_models" in inspect.signature(init).parameters
    except (TypeError, ValueError):
        takes = False
    _AUXILIARY_PARAM[reward_cls] = (init, takes)
    return takes


class BaseSimpleWorkflow(Workflow):
    """Reads the prompt and the reference answer through ``format_args`` and scores replies.

    The reward function gets ``response`` and ``truth``, as Trinity-RFT passes them,
    plus ``prompt`` and the raw row as ``raw_task`` where its signature takes them
    (by name or ``**kwargs``; ``call_reward_fn``); the scalar reward is the sum of the
    components it returns, and every component is recorded in ``Experience.metrics``
    (a bare number, as Trinity-RFT 0.1.x's reward functions return, is the reward).
    """

    can_reset = True
    can_repeat = True
    default_reward_fn: str | None = None
    default_system_prompt: str | None = None
    #: False for workflows that score without one (a judge); then ``reward_fn`` is None
    needs_reward_fn: bool = True

    def __init__(
        self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None
    ) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        self.reset(task)

    def reset(self, task: Task) -> None:
        self.task = task
        self.format_args = task.format_args
        self.keep_rollout_args(task.rollout_args.copy())
        self.workflow_args = task.workflow_args
        self.raw_task = task.raw_task or {}
        self.system_prompt = self.format_args.system_prompt or self.default_system_prompt
        if self.format_args.system_prompt_key and self.raw_task.get(
            self.format_args.system_prompt_key
        ):
            self.system_prompt = self.raw_task[self.format_args.system_prompt_key]
        self.reply_prefix = self.format_args.reply_prefix
        self.task_desc = task.task_desc
        self.truth = task.truth
        if self.task_desc is None:
            raise ValueError(
                f"task {task.task_id!r}: row has no prompt key '{self.format_args.prompt_key}' "
                f"(keys: {sorted(self.raw_task)})"
            )
        reward_cls = task.reward_fn_cls
        if reward_cls is None and self.default_reward_fn:
            from reinforge.rewards import REWARD_FUNCTIONS

            reward_cls = REWARD_FUNCTIONS.get(self.default_reward_fn)
        if reward_cls is None and not self.needs_reward_fn:
            self.reward_fn = None
        elif reward_cls is None:
            raise ValueError(
                f"{type(self).__name__} needs a reward function: set default_reward_fn_type "
                "in the taskset config"
            )
        else:
            self.reward_fn = self.make_reward_fn(reward_cls, task.reward_fn_args)
        self.repeat_times = task.repeat_times
        self.run_id_base = 0

    def make_reward_fn(self, reward_cls: type, reward_fn_args: dict[str, Any]) -> Any:
        """The reward function, built with the taskset's ``reward_fn_args``; one whose
        constructor takes ``auxiliary_models`` (a model-based scorer) also gets those."""
        if _takes_auxiliary_models(reward_cls) and "auxiliary_models" not in reward_fn_args:
            return reward_cls(auxiliary_models=self.auxiliary_models, **reward_fn_args)
        return reward_cls(**reward_fn_args)

    def set_repeat_times(self, repeat_times: int, run_id_base: int) -> None:
        super().set_repeat_times(repeat_times, run_id_base)
        # a GenerationConfig, or the dict a Trinity-style subclass keeps
        # (``asdict(task.rollout_args)``): both take item assignment
        self.rollout_args["n"] = repeat_times

    def format_messages(self) -> list[dict[str, str]]:
        messages = []
        if self.system_prompt:
            messages.append({"role": "system", "content": self.system_prompt})
        template = self.format_args.prompt_template
        user = template.replace("{prompt}", self.task_desc) if template else self.task_desc
        messages.append({"role": "user", "content": user})
        if self.reply_prefix:
            messages.append({"role": "assistant", "content": self.reply_prefix})
        return messages

    def chat_kwargs(self) -> dict[str, Any]:
        return rollout_kwargs(self.rollout_args)

    def score(self, responses: list[Experience]) -> list[Experience]:
        """Reward each reply. A dict of components is summed and each one recorded as a
        metric; a bare number (a Trinity-RFT 0.1.x reward function, which returned a float
        unless asked for a dict) is the reward itself, as 0.1.x's ``SimpleWorkflow`` took it.
        A function naming ``return_dict`` gets ``return_dict=task.is_eval``, as 0.1.x passed
        it, so evaluation tasks still record its components."""
        optional = {"prompt": self.task_desc, "raw_task": self.raw_task}
        accepted = accepted_keywords(self.reward_fn)
        if accepted is not None and "return_dict" in accepted:
            optional["return_dict"] = self.task.is_eval
        for i, exp in enumerate(responses):
            value = call_reward_fn(
                self.reward_fn,
                response=exp.response_text or "",
                truth=self.truth,
                optional=optional,
            )
            if isinstance(value, Mapping):
                exp.reward = float(sum(value.values()))
                exp.metrics.update({k: float(v) for k, v in value.items()})
            elif isinstance(value, numbers.Real):
                exp.reward = float(value)
            else:
                raise TypeError(
                    f"reward function {type(self.reward_fn).__name__} returned "
                    f"{type(value).__name__}: expected a dict of scores or a number"
                )
            exp.eid.run = self.run_id_base + i
        return responses


@WORKFLOWS.register_module("simple_workflow")
class SimpleWorkflow(BaseSimpleWorkflow):
    """Chat once with the task's prompt; score each of the ``n`` replies."""

    def run(self) -> list[Experience]:
        return self.score(self.model.chat(self.format_messages(), **self.chat_kwargs()))


@WORKFLOWS.register_module("async_simple_workflow")
class AsyncSimpleWorkflow(BaseSimpleWorkflow):
    is_async = True

    async def run_async(self) -> list[Experience]:
        return self.score(await self.model.chat_async(self.format_messages(), **self.chat_kwargs()))
