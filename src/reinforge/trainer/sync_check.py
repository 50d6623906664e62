"""The weight check after every sync: does each engine replica serve the trainer's weights?

A weight sync can "succeed" and still leave an engine sampling from other weights: a
tensor that was never loaded, a LoRA adapter that never reached the server, a replica
that kept the previous version, weights cast to the wrong dtype. Nothing downstream
fails; the run just learns from the wrong policy. So after each sync the engine scores
a small fixed probe (a prompt and a continuation of a few dozen tokens) on every
replica, and its log-probs on the continuation are compared with the trainer's own
forward pass on the same ids. A gap beyond the tolerance fails the step with a
``WeightCheckError`` naming the engine, the replica and the version.

The tolerance is per engine and dtype (``TOLERANCES``): the honest gap of a correct
sync, measured as docs/verification.md describes, times a margin. The statistic is the
largest per-token gap on the continuation.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

logger = logging.getLogger(__name__)

#: seconds the weight check took after a sync (scoring the probe on every replica plus
#: the trainer's forward pass), reported beside ``train/sync_time``
SYNC_VERIFY_TIME = "sync/verify_time"
#: seconds the explorer's store of a step, or a train step at its start, waited for the
#: last sync's check to be decided (it runs behind the sync: ``WeightCheck.deferred``)
SYNC_VERIFY_WAIT = "sync/verify_wait_time"

#: the probe: fixed text, tokenized by the policy's tokenizer (prompt, then continuation;
#: 11 + 27 tokens with SmolLM2's tokenizer: the check's cost grows with its length)
PROBE_PROMPT = "Question: what is 7 * 8?\n"
PROBE_CONTINUATION = (
    "Answer: 7 * 8 = 56. The capital of France is Paris, and water boils at one hundred degrees."
)

#: largest |log p_engine - log p_trainer| per token a correct sync may show, by (engine,
#: dtype of the engine or the trainer, whichever is coarser); see docs/verification.md
#: for the measured honest gaps these sit above. bf16: 90 correct syncs of the 135M
#: model on vLLM at lr 1e-5..1e-3 showed up to 1.43 (at the demo's 2e-5), 42 on hf up to
#: 0.60: a bf16 engine computes in bf16 (0.4-0.55 of it) and holds the trainer's
#: weights rounded to bf16, which at small learning rates lag the trainer's by up to
#: half a bf16 step on every weight, all in the update's direction (up to 1.26 of it,
#: the same for any bf16 engine); 3.0 sits about 2x above, far from any correct sync
#: measured, and catches gross breaks only (docs/verification.md lists which).
TOLERANCES: dict[tuple[str, str], float] = {
    ("hf", "float32"): 1e-4,
    ("hf", "bfloat16"): 3.0,
    ("hf", "float16"): 0.25,
    ("vllm", "float32"): 5e-3,
    ("vllm", "bfloat16"): 3.0,
    ("vllm", "float16"): 0.25,
}
_COARSENESS = {"float32": 0, "float16": 1, "bfloat16": 2}


class WeightCheckError(RuntimeError):
    """An engine replica does not serve the weights the trainer just synced."""


def probe_ids(tokenizer: Any) -> tuple[list[int], int]:
    """The probe's token ids and where its continuation starts."""
    prompt = list(tokenizer.encode(PROBE_PROMPT))
    return prompt + list(tokenizer.encode(PROBE_CONTINUATION)), len(prompt)


def trainer_logprobs(trainer: Any, ids: list[int], start: int = 1) -> list[float] | None:
    """log p(ids[i] | ids[:i]) for i >= ``start`` under the trainer's policy (LoRA
    applied), in fp32 without autocast; None for a trainer that cannot say (ranks
    without the hook).

    A trainer may answer itself through ``probe_logprobs(ids)``; the in-process trainer
    is asked through its model, in eval mode (no dropout), projecting onto the
    vocabulary only the positions compared (``logits_to_keep``)."""
    hook = getattr(trainer, "probe_logprobs", None)
    if hook is not None:
        return list(hook(ids))[start - 1 :]
    model = getattr(trainer, "model", None)
    if model is None:
        return None
    from reinforge.trainer.sharding.strategy import LogprobModule

    device = next(model.parameters()).device
    training = model.training
    keep = len(ids) - start
    model.eval()
    try:
        with torch.no_grad():
            wrapper = getattr(trainer, "forward_module", model)
            if isinstance(wrapper, LogprobModule):  # sharded ranks: FSDP2's root unit
                return _through_wrapper(wrapper, ids, start, device)
            tensor = torch.tensor([ids], device=device)
            out = model(input_ids=tensor, use_cache=False, logits_to_keep=keep + 1)
            logits = out.logits[0, :-1].float()
    finally:
        model.train(training)
    targets = tensor[0, start:, None]
    return torch.log_softmax(logits, -1).gather(-1, targets)[:, 0].tolist()


def _through_wrapper(model: Any, ids: list[int], start: int, device: Any) -> list[float]:
    """The probe's log-probs through the module a sharded trainer calls (its forward
    hooks gather the shards of the embeddings and head; each layer gathers its own)."""
    from reinforge.algorithms import collate
    from reinforge.core import Experience

    probe = Experience(tokens=torch.tensor(ids), prompt_length=start)
    logp, _ = model(collate([probe], 0).to(device))
    return logp[0, start - 1 :].float().tolist()


def engine_precision(engine: Any) -> tuple[str, str]:
    """(engine kind, dtype it computes in), the key of ``TOLERANCES``."""
    from reinforge.models.engines.hf import HFEngine

    if isinstance(engine, HFEngine):
        return "hf", str(next(engine.model.parameters()).dtype).removeprefix("torch.")
    return "vllm", str(getattr(engine, "dtype", "float32"))


def _trainer_dtype(trainer: Any) -> str:
    cfg = getattr(trainer, "cfg", None)
    dtype = str(getattr(cfg, "dtype", "float32"))
    mixed = getattr(trainer, "mixed_precision", None)
    if mixed is None and cfg is not None:  # the ranks' driver: resolved as a rank does
        from reinforge.core.precision import resolve_mixed_precision

        device = getattr(cfg, "device", "cpu")
        mixed = resolve_mixed_precision(cfg.mixed_precision, "cpu" if device == "auto" else device)
    if mixed == "bf16":
        return "bfloat16"
    return dtype


def default_tolerance(trainer: Any, engine: Any) -> tuple[float, str]:
    """The tolerance for this pair and how it was chosen (for the error message)."""
    kind, dtype = engine_precision(engine)
    coarser = max(dtype, _trainer_dtype(trainer), key=lambda d: _COARSENESS.get(d, 2))
    key = (kind, coarser if coarser in _COARSENESS else "bfloat16")
    return TOLERANCES[key], f"{key[0]} {key[1]}"


@dataclass
class _Pending:
    """A sync's check whose sides are still being computed (``WeightCheck.verify``)."""

    version: int
    kind: str
    start: int
    tolerance: float
    basis: str
    expected: Future[list[float] | None]
    served: Future[list[tuple[str, list[float]]]]
    trainer_name: str


def _in_thread(name: str, fn: Any, *args: Any) -> Future:
    """``fn(*args)`` in a daemon thread; its result or exception in the future."""
    future: Future = Future()

    def run() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever reads the future
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def _asks_ranks(trainer: Any) -> bool:
    """Whether ``trainer`` answers through ``probe_logprobs`` (its ranks: one command at
    a time on their connections, so never beside the sync's or a checkpoint's)."""
    return getattr(trainer, "probe_logprobs", None) is not None


def _trainer_side(trainer: Any, ids: list[int], start: int) -> Future[list[float] | None]:
    """The trainer's log-probs on the probe: an in-process trainer in a worker thread,
    the ranks at once."""
    if not _asks_ranks(trainer):
        return _in_thread("reinforge-weight-check", trainer_logprobs, trainer, ids, start)
    done: Future[list[float] | None] = Future()
    try:
        done.set_result(trainer_logprobs(trainer, ids, start))
    except Exception as exc:
        done.set_exception(exc)
    return done


@dataclass
class WeightCheck:
    """The check a run does after each sync; ``tolerance`` None picks ``TOLERANCES``'s.

    ``deferred``: ``verify`` only sets the engine's side going (each replica scores the
    probe while the caller goes on, e.g. the explorer samples the next step) and
    ``settle`` decides it; the caller must call ``settle`` before anything sampled from
    the new weights is trained on, and ``mode: both`` calls it before anything sampled
    from them is stored (the explorer's ``before_store``). ``start`` settles the
    previous sync's check itself, so no sync replaces weights whose check is still
    open. Not deferred, ``verify`` decides at once.

    Why the store waits rather than failed rows being marked afterwards: a resumed run
    syncs its restored weights under the same version number the failed sync had, so
    "rows of version V" cannot tell the broken sampling from the fixed one once the
    run goes on; a mark written on the failure is also lost if the process dies
    first. Held back, a step sampled from failed weights never reaches the buffer
    (nor the taskset cursor stored with it), so a resumed run samples that step again
    from its own, checked weights, and nothing needs cleaning up. The wait is
    normally none: the probe's two forward passes finish long before a step's rollouts.

    ``last_seconds``: what the last ``verify`` held its caller up (``sync/verify_time``);
    ``take_waited()``: the seconds ``settle`` has waited since it was last asked
    (``sync/verify_wait_time``); ``last_gaps``: the largest gap per replica of the last
    decided check."""

    enabled: bool = True
    tolerance: float | None = None
    deferred: bool = False
    last_seconds: float = 0.0
    last_gaps: dict[str, float] = field(default_factory=dict)
    _warned: bool = False
    _pending: _Pending | None = None
    _waited: float = 0.0
    #: held while a verdict is decided: the explorer's store and a train step in a
    #: worker thread (``synchronizer.overlap``) may settle at the same time, and the
    #: second must wait for the verdict rather than find nothing open and go on
    _settling: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def start(self, trainer: Any, engine: Any) -> Future[list[float] | None] | None:
        """Called before a sync: decide a check still open from the previous sync, then
        begin the trainer's side (its forward pass on the probe; the trainer's weights
        do not change during a sync). None when the check is off or the engine cannot
        be asked, and when deferred: ``verify`` then starts it after the sync, so it
        does not compete with the weights' copy.

        In-process trainers score in a worker thread. A trainer that answers through
        ``probe_logprobs`` (the trainer ranks: a command, and on sharded ranks a
        collective) is asked here, before the sync: its commands run one at a time."""
        self.settle()
        if not self.enabled or not hasattr(engine, "score_replicas"):
            return None
        if self.deferred and not _asks_ranks(trainer):
            return None  # ``verify`` starts it after the sync, off the sync's path
        return _trainer_side(trainer, *probe_ids(engine.tokenizer))

    def verify(self, trainer: Any, engine: Any, pending: Future | None = None) -> float:
        """Have every replica of ``engine`` score the probe against ``trainer``'s (from
        ``start``, else computed now); returns the seconds this held the caller up.
        Not deferred, it waits for the result and raises ``WeightCheckError`` on a gap
        beyond the tolerance; deferred, ``settle`` does."""
        self.last_gaps, self.last_seconds = {}, 0.0
        if not self.enabled or not hasattr(engine, "score_replicas"):
            return 0.0
        began = time.perf_counter()
        ids, start = probe_ids(engine.tokenizer)
        if self.tolerance is not None:
            tolerance, basis = self.tolerance, "synchronizer.verify_tolerance"
        else:
            tolerance, basis = default_tolerance(trainer, engine)
        if pending is None:
            pending = _trainer_side(trainer, ids, start)
        self._pending = _Pending(
            version=engine.model_version,
            kind=engine_precision(engine)[0],
            start=start,
            tolerance=tolerance,
            basis=basis,
            expected=pending,
            # the hf engine queues the score behind the weight update it just applied,
            # so the probe sees exactly the synced weights; nothing else changes them
            # before ``settle`` (the next sync settles first)
            served=_in_thread("reinforge-weight-probe", engine.score_replicas, ids),
            trainer_name=type(trainer).__name__,
        )
        if not self.deferred:
            self._decide()
        self.last_seconds = time.perf_counter() - began
        return self.last_seconds

    def settle(self) -> float:
        """Decide the check a deferred ``verify`` left open (raising ``WeightCheckError``
        if it fails); returns the seconds it waited. A no-op when none is open."""
        began = time.perf_counter()
        with self._settling:
            if self._pending is None:
                return 0.0
            try:
                self._decide()
            finally:
                waited = time.perf_counter() - began
                self._waited += waited
        return waited

    def take_waited(self) -> float:
        """The seconds ``settle`` waited since the last call (then back to 0)."""
        waited, self._waited = self._waited, 0.0
        return waited

    def _decide(self) -> None:
        """Wait for both sides of the open check and compare them."""
        check, self._pending = self._pending, None
        if check is None:
            return
        self.last_gaps = {}
        try:
            served = check.served.result()
        except Exception as exc:
            raise WeightCheckError(
                f"weight check after the sync to version {check.version}: the {check.kind} "
                f"engine could not score the probe: {type(exc).__name__}: {exc}"
            ) from exc
        expected = check.expected.result()
        if expected is None:
            if not self._warned:
                logger.warning(
                    "weight check skipped: %s cannot score the probe", check.trainer_name
                )
                self._warned = True
            return
        for replica, logprobs in served:
            gaps = [abs(a - b) for a, b in zip(logprobs[check.start - 1 :], expected, strict=True)]
            worst = max(gaps)
            self.last_gaps[replica] = worst
            if not worst <= check.tolerance:  # (NaN fails too)
                raise WeightCheckError(
                    f"weight check failed after the sync to version {check.version}: the "
                    f"{check.kind} engine's {replica} is not serving the trainer's weights: "
                    f"its log-probs on the {len(gaps)}-token probe are up to {worst:.3g} (mean "
                    f"{sum(gaps) / len(gaps):.3g}) away from the trainer's, tolerance "
                    f"{check.tolerance:g} ({check.basis}). A tensor not loaded, a LoRA adapter "
                    "not applied, a replica left on older weights and weights in the wrong "
                    "dtype all look like this (docs/verification.md); "
                    "synchronizer.verify_weights: false turns the check off."
                )
