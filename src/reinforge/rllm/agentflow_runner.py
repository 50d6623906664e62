"""rLLM 0.3 AgentFlows as reinforge workflows: gateway, evaluator, token-exact experiences.

``agentflow_workflow(flow)`` returns the reinforge ``Workflow`` that runs ``flow`` in
the explorer (``WORKFLOWS`` calls it for ``@rollout`` flows, so naming one in a
taskset by dotted path or registered name is enough). For each of the task's
``repeat_times`` rollouts, all at once, it

1. opens a gateway session on the rollout model (``agentflow_gateway``): an OpenAI
   endpoint that applies the taskset's ``rollout_args`` and records every call;
2. calls the flow with an rLLM ``Task`` (``id`` = the task id, ``instruction`` = the
   row's prompt, ``metadata`` = a copy of the row) and an ``AgentConfig`` whose
   ``base_url`` is that session, and turns what it returns into an Episode (an
   Episode, a Trajectory or None; anything else is an error naming the flow);
3. gives the episode's steps the token ids of the calls that produced them
   (``claim_calls``): a step whose reply text (``model_response``, else ``output``)
   is that of a call, its conversation starting with the call's messages, gets that
   call; steps left without ids then take the calls left over, in the order they
   were made (rLLM's own rule); a trajectory without steps (the flow returned None)
   gets one step per call left after that;
4. scores the episode with the evaluator: its reward goes to every trajectory whose
   ``reward`` is still None, ``is_correct`` to the episode, signals and numeric
   metadata to the episode's metrics;
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
reward function's name; default: the taskset's ``default_reward_fn_type``),
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
import inspect
import logging
import math
from collections.abc import Callable, Iterable
from typing import Any

from reinforge.core import Experience
from reinforge.core.episode import Step as CoreStep
from reinforge.core.episode import TerminationReason
from reinforge.models.wrapper.sampling_args import rollout_kwargs
from reinforge.rewards import RewardFn, call_reward_fn
from reinforge.rllm.agentflow_gateway import SEED_STRIDE, RecordedCall, gateway
from reinforge.rllm.eval.types import EvalOutput, EvalOutputError, Signal, coerce_eval_output
from reinforge.rllm.types import (
    AgentConfig,
    AgentFlowReturnError,
    Episode,
    Step,
    Task,
    Trajectory,
    call_agent_flow,
    coerce_to_episode,
    flow_label,
    trajectory_name_of,
)
from reinforge.workflows.episode.attach import attach_output
from reinforge.workflows.episode.callable_args import named_object
from reinforge.workflows.episode.conversion import ConversionOptions, episode_outcome
from reinforge.workflows.episode.workflow import error_info
from reinforge.workflows.workflow import Workflow

__all__ = [
    "AgentFlowWorkflow",
    "RewardFnEvaluator",
    "agentflow_workflow",
    "apply_eval_output",
    "claim_calls",
    "resolve_evaluator",
]

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


# ---- evaluators -------------------------------------------------------------------------


class RewardFnEvaluator:
    """A reinforge reward function used as an rLLM Evaluator.

    It scores the episode's answer (``artifacts["answer"]``, rLLM's convention; else
    the last reply of the last trajectory that has one) against the row's truth
    (``truth_key``, the taskset's ``format.response_key``). The reward is the sum of
    the components, correct when above 0; each component is a signal.
    """

    def __init__(self, reward_fn: Any, truth_key: str | None = None) -> None:
        self.reward_fn = reward_fn
        self.truth_key = truth_key

    def __repr__(self) -> str:
        return f"RewardFnEvaluator({type(self.reward_fn).__name__})"

    @staticmethod
    def answer(episode: Episode) -> str:
        """The text an answer-scoring reward function should see."""
        artifacts = getattr(episode, "artifacts", None) or {}
        if artifacts.get("answer") is not None:
            return str(artifacts["answer"])
        for traj in reversed(episode.trajectories):
            for step in reversed(traj.steps):
                text = _reply_text(step)
                if text:
                    return text
        return ""

    def evaluate(self, task: Task, episode: Episode) -> EvalOutput:
        row = task.metadata or {}
        truth = row.get(self.truth_key) if self.truth_key else None
        components = call_reward_fn(
            self.reward_fn,
            self.answer(episode),
            truth=None if truth is None else str(truth),
            optional={"prompt": task.instruction, "raw_task": row},
        )
        total = float(sum(components.values()))
        signals = [Signal(name=str(k), value=float(v)) for k, v in components.items()]
        return EvalOutput(reward=total, is_correct=total > 0, signals=signals)


class _FunctionEvaluator:
    """A plain ``(task, episode)`` function used as an Evaluator."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def evaluate(self, task: Any, episode: Episode) -> Any:
        return self.fn(task, episode)


def resolve_evaluator(spec: Any, task: Any, where: str = "workflow_args.evaluator") -> Any:
    """The Evaluator ``spec`` names (see the module docstring); with ``spec`` None, the
    task's reward function; None when there is neither."""
    if spec is None:
        reward_cls = task.reward_fn_cls
        if reward_cls is None:
            return None
        return RewardFnEvaluator(reward_cls(**task.reward_fn_args), task.format_args.response_key)
    target = spec
    if isinstance(spec, str):
        target = named_object(where, spec)
    if isinstance(target, type) and issubclass(target, RewardFn):
        return RewardFnEvaluator(target(**task.reward_fn_args), task.format_args.response_key)
    if isinstance(target, RewardFn):
        return RewardFnEvaluator(target, task.format_args.response_key)
    if isinstance(target, type):
        try:
            target = target()
        except TypeError as exc:
            raise ValueError(
                f"{where}: the class {flow_label(target)} must build without arguments ({exc})"
            ) from exc
    if callable(getattr(target, "evaluate", None)):
        return target
    if callable(target):
        return _FunctionEvaluator(target)
    raise ValueError(
        f"{where}: {spec!r} is not an Evaluator (no evaluate(task, episode)) nor callable"
    )


def _first_parameter(fn: Callable[..., Any]) -> inspect.Parameter | None:
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        return None
    return params[0] if params else None


def _wants_row(evaluator: Any) -> bool:
    """Whether ``evaluator`` takes the task as the row dict rather than a ``Task``.

    As in rLLM's trainer: a first parameter annotated ``dict`` or named ``task_data`` /
    ``task_info`` gets the row. An ``@evaluator`` function gets the row unless its
    first parameter is annotated with ``Task`` alone (rLLM's trainer hands those
    functions the row, so cookbook evaluators read ``task["..."]``).
    """
    if isinstance(evaluator, _FunctionEvaluator):
        fn, decorated = evaluator.fn, False
    else:
        wrapped = getattr(evaluator, "__wrapped__", None)  # an @evaluator function's own
        fn, decorated = (wrapped, True) if wrapped is not None else (evaluator.evaluate, False)
    param = _first_parameter(fn)
    if param is None:
        return False
    if param.name in ("task_data", "task_info"):
        return True
    note = param.annotation
    if note is inspect.Parameter.empty:
        text = ""
    else:
        text = note if isinstance(note, str) else getattr(note, "__name__", str(note))
    if "dict" in text.lower():
        return True
    return decorated and "Task" not in text


def evaluator_label(evaluator: Any) -> str:
    if isinstance(evaluator, RewardFnEvaluator | _FunctionEvaluator):
        return (
            repr(evaluator)
            if isinstance(evaluator, RewardFnEvaluator)
            else flow_label(evaluator.fn)
        )
    return flow_label(evaluator)


def run_evaluator(evaluator: Any, task: Task, episode: Episode) -> EvalOutput:
    """``evaluator.evaluate`` on the task (row or ``Task``, see ``_wants_row``), coerced."""
    label = f"evaluator {evaluator_label(evaluator)}"
    argument = copy.deepcopy(task.metadata) if _wants_row(evaluator) else task
    return coerce_eval_output(evaluator.evaluate(argument, episode), label)


def apply_eval_output(episode: Episode, verdict: EvalOutput) -> None:
    """Write a verdict onto ``episode``: trajectory rewards left unset, signals,
    correctness, metrics."""
    signals = {s.name: float(s.value) for s in verdict.signals}
    for traj in episode.trajectories:
        if traj.reward is None:
            traj.reward = float(verdict.reward)
        if isinstance(traj, Trajectory) and not traj.signals:
            traj.signals = dict(signals)
    episode.is_correct = bool(verdict.is_correct)
    for key, value in verdict.metadata.items():
        if isinstance(value, bool | int | float) and math.isfinite(float(value)):
            episode.metrics[str(key)] = float(value)
    episode.metrics.update(signals)


# ---- steps and calls --------------------------------------------------------------------


def _reply_text(step: CoreStep) -> str:
    if step.model_response:
        return step.model_response
    output = getattr(step, "output", None)
    return output if isinstance(output, str) else ""


def _content(message: Any) -> Any:
    return message.get("content") if isinstance(message, dict) else message


def _continues(chat: list[dict[str, Any]], messages: list[dict[str, Any]]) -> bool:
    """Whether ``chat`` starts with ``messages`` (roles and contents; True when empty)."""
    if not chat:
        return True
    if len(chat) < len(messages):
        return False
    return all(
        isinstance(a, dict) and a.get("role") == b.get("role") and _content(a) == _content(b)
        for a, b in zip(chat, messages, strict=False)
    )


def _attach(step: CoreStep, call: RecordedCall) -> None:
    out = call.output
    attach_output(step, out)
    if not step.chat_completions:
        step.chat_completions = [*copy.deepcopy(call.messages), _assistant(out)]
    if not step.model_response:
        step.model_response = out.content or ""


def _assistant(out: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": out.content}
    if out.reasoning:
        message["reasoning"] = out.reasoning
    if out.tool_calls:
        message["tool_calls"] = out.tool_calls
    return message


def _step_of(call: RecordedCall) -> Step:
    out = call.output
    step = Step.from_model_output(out, copy.deepcopy(call.messages))
    step.output = out.content
    return step


def claim_calls(episode: Episode, calls: Iterable[RecordedCall]) -> list[RecordedCall]:
    """Give the episode's steps the token ids of ``calls`` (the module docstring's
    step 3); the calls no step took."""
    pool = list(calls)
    steps = [step for traj in episode.trajectories for step in traj.steps]
    for step in steps:  # steps that already hold ids hold them from one of the calls
        if step.has_tokens:
            for i, call in enumerate(pool):
                out = call.output
                if list(out.prompt_ids or []) == list(step.prompt_ids) and list(
                    out.completion_ids or []
                ) == list(step.response_ids):
                    del pool[i]
                    break
    for step in steps:
        text = _reply_text(step)
        if step.has_tokens or not text:
            continue
        for i, call in enumerate(pool):
            if text in (call.output.text, call.output.content) and _continues(
                step.chat_completions, call.messages
            ):
                _attach(step, pool.pop(i))
                break
    for step in steps:
        if not step.has_tokens and pool:
            _attach(step, pool.pop(0))
    for traj in episode.trajectories:
        if not traj.steps and pool:
            traj.steps = [_step_of(call) for call in pool]
            pool = []
    return pool


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
        self.evaluator = resolve_evaluator(args.pop("evaluator", None), task)
        if self.evaluator is None:
            raise ValueError(
                f"AgentFlow {self.flow_name} has no evaluator: set workflow_args.evaluator (an "
                "rLLM Evaluator, an @rllm.evaluator function or a reward function name) or the "
                "taskset's default_reward_fn_type"
            )
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
        with gateway().session(
            self.model, label=uid.replace(":", "-"), enforced=sampling
        ) as session:
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
            calls = session.calls
        if ended is not None:  # what the model said before the end stays, unscored
            steps = [_step_of(call) for call in calls]
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
        try:
            verdict = await asyncio.to_thread(run_evaluator, self.evaluator, task, episode)
        except EvalOutputError:
            raise
        except Exception as exc:
            raise RuntimeError(
                f"AgentFlow {self.flow_name}: evaluator {evaluator_label(self.evaluator)} failed on "
                f"episode {uid}: {type(exc).__name__}: {exc}"
            ) from exc
        apply_eval_output(episode, verdict)
        if episode.termination_reason is None:
            episode.termination_reason = TerminationReason.ENV_DONE
        return episode

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
