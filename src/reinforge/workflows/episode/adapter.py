"""Running episode workflows in the explorer: a reinforge ``Workflow`` around each class.

The explorer builds workflows as ``cls(task=..., model=..., auxiliary_models=...)``
and awaits ``run_async()`` for a list of experiences. ``adapter_for(EpisodeCls)``
returns a ``Workflow`` subclass doing that for an episode workflow: for each of the
task's ``repeat_times`` rollouts it builds a fresh episode workflow over a
``ModelWrapperEngine``, runs ``run_with_termination_handling(task row, uid)`` -
all rollouts of the task concurrently - and converts the episodes with
``episode_to_experiences``.

``WORKFLOWS`` calls ``adapter_for`` through ``EpisodeWorkflow.__reinforge_workflow__``
(this module installs it there when imported, so ``workflow`` never imports the adapter)
when an episode workflow is registered or looked up by dotted path, so users never
name the adapter. It carries the episode class's module and qualified name, so a
Task holding it serialises to the episode class's dotted path, which resolves back
to the same adapter.

Taskset ``workflow_args`` become the episode workflow's constructor arguments
(``timeout``, ``gamma``, ``reward_bonus_coeff``, anything the subclass takes), except
two reserved keys: ``conversion`` (``ConversionOptions`` fields) and
``rollout_engine_args`` (``ModelWrapperEngine`` options such as
``max_prompt_length``). A string given for an argument that takes a callable
(``reward_function: my_pkg.rewards.f`` or a registered reward name) is resolved to
that callable first (``callable_args``). The task's ``rollout_args`` are the default sampling
arguments; with a ``seed``, rollout ``i`` samples with ``seed + i`` so that the
rollouts of a group differ.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from typing import Any

from reinforge.core import Experience, Task
from reinforge.core.episode import Episode, TerminationReason
from reinforge.models.wrapper.sampling_args import rollout_kwargs
from reinforge.workflows.episode.callable_args import resolve_callable_args
from reinforge.workflows.episode.conversion import ConversionOptions, episode_outcome
from reinforge.workflows.episode.rollout_engine import ModelWrapperEngine
from reinforge.workflows.episode.workflow import EpisodeWorkflow, install_adapter_factory
from reinforge.workflows.workflow import Workflow

logger = logging.getLogger(__name__)

RESERVED_ARGS = ("conversion", "rollout_engine_args")


class EpisodeWorkflowAdapter(Workflow):
    """Runs ``episode_workflow_cls`` for one task; see the module docstring."""

    is_async = True
    can_repeat = True
    episode_workflow_cls: type[EpisodeWorkflow]

    def __init__(
        self, *, task: Task, model: Any, auxiliary_models: list[Any] | None = None
    ) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        args = dict(task.workflow_args)
        self.options = ConversionOptions.build(
            self.episode_workflow_cls.conversion_options, args.pop("conversion", None)
        )
        self.engine_args: dict[str, Any] = dict(args.pop("rollout_engine_args", None) or {})
        self.workflow_kwargs = resolve_callable_args(self.episode_workflow_cls, args)
        self.sampling = rollout_kwargs(task.rollout_args)
        self.sampling.pop("n", None)
        self.episodes: list[Episode] = []

    def make_engine(self, run: int) -> ModelWrapperEngine:
        sampling = dict(self.sampling)
        if sampling.get("seed") is not None:
            sampling["seed"] = int(sampling["seed"]) + run
        return ModelWrapperEngine(self.model, sampling=sampling, **self.engine_args)

    def make_episode_workflow(self, run: int) -> EpisodeWorkflow:
        """A fresh episode workflow (own agents and envs) for rollout ``run``."""
        return self.episode_workflow_cls(
            rollout_engine=self.make_engine(run), executor=None, **self.workflow_kwargs
        )

    def task_payload(self) -> dict[str, Any]:
        """What ``run(task, uid)`` receives: a private copy of the taskset row."""
        return copy.deepcopy(self.task.raw_task or {})

    def uid(self, run: int) -> str:
        return f"{self.task.task_id}:{run}"

    async def run_episode(self, run: int) -> Episode:
        workflow = self.make_episode_workflow(run)
        return await workflow.run_with_termination_handling(self.task_payload(), self.uid(run))

    async def run_async(self) -> list[Experience]:
        runs = list(range(self.run_id_base, self.run_id_base + self.repeat_times))
        self.episodes = list(await asyncio.gather(*(self.run_episode(r) for r in runs)))
        exps: list[Experience] = []
        for run, episode in zip(runs, self.episodes, strict=True):
            _log_abnormal_end(episode)
            # a masked episode (timed out, env error) is an outcome: it comes back
            # marked as masked, never as no experience, which would fail the task
            exps.extend(episode_outcome(episode, self.options, run=run))
        return exps


def _log_abnormal_end(episode: Episode) -> None:
    reason = episode.termination_reason
    if reason is TerminationReason.ERROR:
        error = episode.info.get("error") or {}
        logger.warning(
            "episode %s ended with an error: %s",
            episode.id,
            error.get("traceback") or error.get("error_message"),
        )
    elif reason is TerminationReason.TIMEOUT:
        logger.warning("episode %s timed out", episode.id)


def adapter_for(cls: type[EpisodeWorkflow]) -> type[EpisodeWorkflowAdapter]:
    """The (cached) ``EpisodeWorkflowAdapter`` subclass that runs ``cls``."""
    if not (isinstance(cls, type) and issubclass(cls, EpisodeWorkflow)):
        raise TypeError(f"{cls!r} is not an EpisodeWorkflow subclass")
    cached = cls.__dict__.get("_reinforge_adapter")
    if cached is not None:
        return cached
    adapter = type(
        cls.__name__,
        (EpisodeWorkflowAdapter,),
        {
            "episode_workflow_cls": cls,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
            "__doc__": f"Runs the episode workflow {cls.__qualname__} in the explorer.",
        },
    )
    cls._reinforge_adapter = adapter  # type: ignore[attr-defined]
    return adapter


install_adapter_factory(adapter_for)
