"""rLLM 0.3 AgentFlows as reinforge workflows: endpoint, evaluator, token-exact experiences.

``agentflow_workflow(flow)`` returns the reinforge ``Workflow`` that runs ``flow`` in
the explorer (``WORKFLOWS`` calls it for ``@rollout`` flows, so naming one in a
taskset by dotted path or registered name is enough). For each of the task's
``repeat_times`` rollouts, all at once, it

1. opens a session for it (``session``): an OpenAI endpoint on the recording server
   every black-box agent uses, answered by a ``ModelWrapper`` of the rollout's own
   whose history records every call, with the taskset's ``rollout_args`` applied;
2. calls the flow with an rLLM ``Task`` (``id`` = the task id, ``instruction`` = the
   row's prompt, ``metadata`` = a copy of the row) and an ``AgentConfig`` whose
   ``base_url`` is that session, and turns what it returns into an Episode (an
   Episode, a Trajectory or None; anything else is an error naming the flow);
3. gives the episode's steps the token ids of the calls that produced them
   (``calls.claim_calls``: by reply text and conversation, then in call order; a
   trajectory without steps, when the flow returned None, gets one step per call);
4. scores the episode with the evaluator: its reward goes to every trajectory whose
   ``reward`` is still None, ``is_correct`` to the episode, signals and numeric
   metadata to the episode's metrics. With no evaluator configured (neither
   ``workflow_args.evaluator`` nor the taskset's ``default_reward_fn_type``) the
   episode keeps the rewards it carries, as rLLM's trainer reads them: a
   trajectory's own ``reward``, else its last step's (``evaluators.carried_rewards``);
5. converts it with ``episode_outcome``: one experience per step that has ids, the
   exact prompt and sampled ids with their log-probabilities, rewarded with its
   trajectory's reward.

A flow that raises ends its episode as ``error``, one that runs past ``timeout`` as
``timeout``: the calls it made until then become one trajectory (named as for
``None``), unscored; both reasons are masked out of training by default, as for
episode workflows (``conversion.mask_termination_reasons: []`` trains on them with
reward 0, rLLM's way).
A flow that returns something else than an Episode, or an evaluator that returns
something else than a verdict, fails the task with an error naming it.

``workflow_args``: ``evaluator`` (dotted path to an rLLM Evaluator object or class,
an ``@evaluator`` function or a plain ``(task, episode)`` function, or a registered
reward function's name; default: the taskset's ``default_reward_fn_type``; with
neither, the rewards the episode carries),
``timeout`` (seconds per episode), ``conversion`` (``ConversionOptions``), and for
``AgentFlowWorkflow`` itself ``agent_flow`` (dotted path to the flow: a function, an
object with ``run``/``arun``, or a class built without arguments). Every other key
goes to ``AgentConfig.metadata``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import importlib
import logging
from typing import Any

from reinforge.core import Experience
from reinforge.core.agentflow import (
    AgentConfig,
    AgentFlowReturnError,
    Episode,
    Task,
    Trajectory,
    call_agent_flow,
    coerce_to_episode,
    flow_label,
    trajectory_name_of,
)
from reinforge.core.episode import TerminationReason
from reinforge.core.eval_output import EvalOutput, EvalOutputError
from reinforge.models.wrapper.sampling_args import rollout_kwargs
from reinforge.workflows.agentflow.calls import claim_calls, recorded_calls, step_of
from reinforge.workflows.agentflow.evaluators import (
    apply_eval_output,
    carried_rewards,
    evaluator_label,
    resolve_evaluator,
    run_evaluator,
)
from reinforge.workflows.agentflow.session import SEED_STRIDE, rollout_session
from reinforge.workflows.episode.conversion import ConversionOptions, episode_outcome
from reinforge.workflows.episode.workflow import error_info
from reinforge.workflows.workflow import Workflow

__all__ = ["RESERVED_ARGS", "AgentFlowWorkflow", "agentflow_workflow"]

logger = logging.getLogger(__name__)

#: workflow_args keys the workflow reads itself; the others go to AgentConfig.metadata
RESERVED_ARGS = ("agent_flow", "evaluator", "timeout", "conversion")


# ---- naming things in YAML --------------------------------------------------------------


def _load(path: str, where: str) -> Any:
    """The object a dotted path names; ``ValueError`` naming ``where`` when none."""
    module_name, _, attr = path.rpartition(".")
    if not module_name:
        raise ValueError(f"{where}: '{path}' is not a dotted path (package.module.name)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"{where}: cannot import '{module_name}' ({exc})") from exc
    if not hasattr(module, attr):
        raise ValueError(f"{where}: module '{module_name}' has no '{attr}'")
    return getattr(module, attr)


def _as_agent_flow(obj: Any, where: str) -> Any:
    """``obj`` as a flow object: a class is built without arguments; the rest must
    have ``run``/``arun`` or be callable."""
    if isinstance(obj, type):
        try:
            obj = obj()
        except TypeError as exc:
            raise ValueError(
                f"{where}: the class {flow_label(obj)} must build without arguments ({exc})"
            ) from exc
    if not (
        callable(getattr(obj, "arun", None)) or callable(getattr(obj, "run", None)) or callable(obj)
    ):
        raise ValueError(
            f"{where}: {flow_label(obj)} is not an AgentFlow (no run(task, config), "
            "async arun(task, config), and not callable)"
        )
    if getattr(obj, "needs_env", False):
        raise ValueError(
            f"{where}: {flow_label(obj)} needs a sandbox (needs_env = True); reinforge runs "
            "AgentFlows beside the trainer and provisions no sandboxes"
        )
    return obj


# ---- the workflow -----------------------------------------------------------------------


class AgentFlowWorkflow(Workflow):
    """Runs an rLLM 0.3 AgentFlow for one task; see the module docstring.

    Subclasses made by ``agentflow_workflow(flow)`` carry their flow in ``agent_flow``;
    this class itself takes it from ``workflow_args.agent_flow``.
    """

    is_async = True
    can_repeat = True
    agent_flow: Any = None

    def __init__(self, *, task: Any, model: Any, auxiliary_models: list[Any] | None = None) -> None:
        super().__init__(task=task, model=model, auxiliary_models=auxiliary_models)
        args = dict(task.workflow_args or {})
        flow = type(self).agent_flow
        named = args.pop("agent_flow", None)
        if flow is None:
            if named is None:
                raise ValueError(
                    f"task {task.task_id!r}: {type(self).__name__} needs the flow: set "
                    "workflow_args.agent_flow to its dotted path (my_pkg.flows.math_flow)"
                )
            found = _load(named, "workflow_args.agent_flow") if isinstance(named, str) else named
            flow = _as_agent_flow(found, "workflow_args.agent_flow")
        elif named is not None:
            raise ValueError(
                f"workflow_args.agent_flow: the workflow {flow_label(flow)} is an AgentFlow "
                "already; name the flow either as default_workflow_type or here, not both"
            )
        self.flow = flow
        self.flow_name = flow_label(flow)
        #: None: the episode keeps the rewards it carries (``carried_rewards``)
        self.evaluator = resolve_evaluator(args.pop("evaluator", None), task)
        timeout = args.pop("timeout", None)
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ValueError(
                f"AgentFlow {self.flow_name}: workflow_args.timeout must be a positive number of "
                f"seconds, got {timeout!r}"
            )
        self.timeout = None if timeout is None else float(timeout)
        try:
            self.options = ConversionOptions.build(args.pop("conversion", None))
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"AgentFlow {self.flow_name}: workflow_args.conversion: {exc}"
            ) from exc
        self.config_metadata = args
        sampling = rollout_kwargs(task.rollout_args)
        sampling.pop("n", None)
        if not sampling.get("stop"):
            sampling.pop("stop", None)
        self.sampling = sampling
        self.episodes: list[Episode] = []

    # ---- one rollout ------------------------------------------------------------------

    def flow_task(self) -> Task:
        """The rLLM ``Task`` the flow gets: a private copy of the row as its metadata."""
        row = copy.deepcopy(self.task.raw_task or {})
        instruction = self.task.task_desc
        if instruction is None:
            instruction = row.get("question", row.get("instruction", ""))
        return Task(id=str(self.task.task_id), instruction=instruction, metadata=row)

    def enforced_sampling(self, run: int) -> dict[str, Any]:
        sampling = dict(self.sampling)
        if sampling.get("seed") is not None:
            sampling["seed"] = int(sampling["seed"]) + SEED_STRIDE * run
        return sampling

    def uid(self, run: int) -> str:
        return f"{self.task.task_id}:{run}"

    async def run_episode(self, run: int) -> Episode:
        uid = self.uid(run)
        task = self.flow_task()
        sampling = self.enforced_sampling(run)
        with rollout_session(self.model, label=uid.replace(":", "-"), enforced=sampling) as session:
            config = AgentConfig(
                base_url=session.base_url,
                model=session.model,
                session_uid=uid,
                metadata=copy.deepcopy(self.config_metadata),
                is_validation=bool(self.task.is_eval),
                sampling_params=dict(sampling),
            )
            ended: TerminationReason | None = None
            error: dict[str, str] | None = None
            result: Any = None
            scope: asyncio.Timeout | None = None
            try:
                async with asyncio.timeout(self.timeout) as scope:
                    result = await call_agent_flow(self.flow, task, config)
            except (AgentFlowReturnError, EvalOutputError):
                raise  # the flow broke its contract: the task fails with the reason
            except TimeoutError as exc:
                if scope is not None and scope.expired():
                    ended = TerminationReason.TIMEOUT
                else:
                    ended, error = TerminationReason.ERROR, error_info(exc)
            except Exception as exc:
                ended, error = TerminationReason.ERROR, error_info(exc)
            calls = recorded_calls(session.experiences())
        if ended is not None:  # what the model said before the end stays, unscored
            steps = [step_of(call) for call in calls]
            trajectories = [Trajectory(name=trajectory_name_of(self.flow), steps=steps)]
            episode = Episode(
                id=uid,
                task=task.metadata,
                termination_reason=ended,
                trajectories=trajectories if steps else [],
                session_id=uid,
            )
            if error is not None:
                episode.info["error"] = error
            _log_abnormal_end(self.flow_name, episode)
            return episode
        episode = coerce_to_episode(result, task, trajectory_name_of(self.flow), flow=self.flow)
        episode.id, episode.task, episode.session_id = uid, task.metadata, uid
        left = claim_calls(episode, calls)
        episode.metrics["agentflow/calls"] = float(len(calls))
        episode.metrics["agentflow/unclaimed_calls"] = float(len(left))
        if left:
            logger.debug(
                "AgentFlow %s, episode %s: %d calls no step took", self.flow_name, uid, len(left)
            )
        if self.evaluator is None:
            carried_rewards(episode)
        else:
            apply_eval_output(episode, await self.verdict(task, episode))
        if episode.termination_reason is None:
            episode.termination_reason = TerminationReason.ENV_DONE
        return episode

    async def verdict(self, task: Task, episode: Episode) -> EvalOutput:
        """The evaluator's verdict on ``episode``; its failure fails the task, naming it."""
        try:
            return await asyncio.to_thread(run_evaluator, self.evaluator, task, episode)
        except EvalOutputError:
            raise
        except Exception as exc:
            raise RuntimeError(
                f"AgentFlow {self.flow_name}: evaluator {evaluator_label(self.evaluator)} failed on "
                f"episode {episode.id}: {type(exc).__name__}: {exc}"
            ) from exc

    async def run_async(self) -> list[Experience]:
        runs = list(range(self.run_id_base, self.run_id_base + self.repeat_times))
        self.episodes = list(await asyncio.gather(*(self.run_episode(r) for r in runs)))
        experiences: list[Experience] = []
        for run, episode in zip(runs, self.episodes, strict=True):
            experiences.extend(episode_outcome(episode, self.options, run=run))
        return experiences


def _log_abnormal_end(flow: str, episode: Episode) -> None:
    if episode.termination_reason is TerminationReason.TIMEOUT:
        logger.warning("AgentFlow %s: episode %s timed out", flow, episode.id)
    else:
        error = episode.info.get("error") or {}
        logger.warning(
            "AgentFlow %s: episode %s raised: %s",
            flow,
            episode.id,
            error.get("traceback") or error.get("error_message"),
        )


def agentflow_workflow(flow: Any) -> type[AgentFlowWorkflow]:
    """The (cached) ``AgentFlowWorkflow`` subclass running ``flow``.

    It carries the flow's module and name, so a Task holding it serialises to the
    flow's dotted path, which resolves back to the same class.
    """
    cached = getattr(flow, "_reinforge_workflow_cls", None)
    if (
        isinstance(cached, type)
        and issubclass(cached, AgentFlowWorkflow)
        and cached.agent_flow is flow
    ):
        return cached
    flow = _as_agent_flow(flow, f"AgentFlow {flow_label(flow)}")
    target = getattr(flow, "__wrapped__", flow)
    name = getattr(target, "__name__", None) or type(flow).__name__
    cls = type(
        name,
        (AgentFlowWorkflow,),
        {
            "agent_flow": staticmethod(flow),
            "__module__": getattr(flow, "__module__", None) or type(flow).__module__,
            "__qualname__": getattr(flow, "__qualname__", None) or name,
            "__doc__": f"Runs the rLLM AgentFlow {flow_label(flow)} in the explorer.",
        },
    )
    with contextlib.suppress(AttributeError, TypeError):  # an object without attributes
        flow._reinforge_workflow_cls = cls
    return cls
