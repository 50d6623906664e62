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

#: the probe: fixed text, tokenized by the policy's tokenizer (prompt, then continuation;
#: 11 + 27 tokens with SmolLM2's tokenizer: the check's cost grows with its length)
PROBE_PROMPT = "Question: what is 7 * 8?\n"
PROBE_CONTINUATION = (
    "Answer: 7 * 8 = 56. The capital of France is Paris, and water boils at one hundred degrees."
)

#: largest |log p_engine - log p_trainer| per token a correct sync may show, by (engine,
#: dtype of the engine or the trainer, whichever is coarser); see docs/verification.md
#: for the measured honest gaps these sit above
TOLERANCES: dict[tuple[str, str], float] = {
    ("hf", "float32"): 1e-4,
    ("hf", "bfloat16"): 0.5,
    ("hf", "float16"): 0.25,
    ("vllm", "float32"): 5e-3,
    ("vllm", "bfloat16"): 0.5,
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
    device = next(model.parameters()).device
    training = model.training
    keep = len(ids) - start
    model.eval()
    try:
        with torch.no_grad():
            tensor = torch.tensor([ids], device=device)
            out = model(input_ids=tensor, use_cache=False, logits_to_keep=keep + 1)
            logits = out.logits[0, :-1].float()
    finally:
        model.train(training)
    targets = tensor[0, start:, None]
    return torch.log_softmax(logits, -1).gather(-1, targets)[:, 0].tolist()


def engine_precision(engine: Any) -> tuple[str, str]:
    """(engine kind, dtype it computes in), the key of ``TOLERANCES``."""
    from reinforge.models.engines.hf import HFEngine

    if isinstance(engine, HFEngine):
        return "hf", str(next(engine.model.parameters()).dtype).removeprefix("torch.")
    return "vllm", str(getattr(engine, "dtype", "float32"))


def _trainer_dtype(trainer: Any) -> str:
    cfg = getattr(trainer, "cfg", None)
    dtype = str(getattr(cfg, "dtype", "float32"))
    if getattr(trainer, "mixed_precision", "no") == "bf16":
        return "bfloat16"
    return dtype


def default_tolerance(trainer: Any, engine: Any) -> tuple[float, str]:
    """The tolerance for this pair and how it was chosen (for the error message)."""
    kind, dtype = engine_precision(engine)
    coarser = max(dtype, _trainer_dtype(trainer), key=lambda d: _COARSENESS.get(d, 2))
    key = (kind, coarser if coarser in _COARSENESS else "bfloat16")
    return TOLERANCES[key], f"{key[0]} {key[1]}"


@dataclass
class WeightCheck:
    """The check a run does after each sync; ``tolerance`` None picks ``TOLERANCES``'s.

    ``last_seconds`` is what the last ``verify`` took (``sync/verify_time``);
    ``last_gaps`` its largest gap per replica."""

    enabled: bool = True
    tolerance: float | None = None
    last_seconds: float = 0.0
    last_gaps: dict[str, float] = field(default_factory=dict)
    _warned: bool = False

    def start(self, trainer: Any, engine: Any) -> Future[list[float] | None] | None:
        """Begin the trainer's side (its forward pass on the probe) in a worker thread,
        so it runs while the sync moves the weights (the trainer's weights do not change
        during a sync); None when the check is off or the engine cannot be asked."""
        if not self.enabled or not hasattr(engine, "score_replicas"):
            return None
        ids, start = probe_ids(engine.tokenizer)
        future: Future[list[float] | None] = Future()

        def forward() -> None:
            try:
                future.set_result(trainer_logprobs(trainer, ids, start))
            except BaseException as exc:  # handed to verify, which raises it
                future.set_exception(exc)

        threading.Thread(target=forward, name="reinforge-weight-check", daemon=True).start()
        return future

    def verify(self, trainer: Any, engine: Any, pending: Future | None = None) -> float:
        """Compare every replica of ``engine`` with ``trainer`` on the probe; returns the
        seconds it took (after ``start``, the wait for the trainer's side included),
        raises ``WeightCheckError`` on a gap beyond the tolerance."""
        self.last_gaps, self.last_seconds = {}, 0.0
        if not self.enabled or not hasattr(engine, "score_replicas"):
            return 0.0
        began = time.perf_counter()
        ids, start = probe_ids(engine.tokenizer)
        kind, _ = engine_precision(engine)
        version = engine.model_version
        try:
            served = engine.score_replicas(ids)
        except Exception as exc:
            raise WeightCheckError(
                f"weight check after the sync to version {version}: the {kind} engine could "
                f"not score the probe: {type(exc).__name__}: {exc}"
            ) from exc
        expected = (
            pending.result() if pending is not None else trainer_logprobs(trainer, ids, start)
        )
        if expected is None:
            if not self._warned:
                logger.warning(
                    "weight check skipped: %s cannot score the probe", type(trainer).__name__
                )
                self._warned = True
            return 0.0
        if self.tolerance is not None:
            tolerance, basis = self.tolerance, "synchronizer.verify_tolerance"
        else:
            tolerance, basis = default_tolerance(trainer, engine)
        for replica, logprobs in served:
            gaps = [abs(a - b) for a, b in zip(logprobs[start - 1 :], expected, strict=True)]
            worst = max(gaps)
            self.last_gaps[replica] = worst
            if not worst <= tolerance:  # (NaN fails too)
                raise WeightCheckError(
                    f"weight check failed after the sync to version {version}: the {kind} "
                    f"engine's {replica} is not serving the trainer's weights: its log-probs on "
                    f"the {len(gaps)}-token probe are up to {worst:.3g} (mean "
                    f"{sum(gaps) / len(gaps):.3g}) away from the trainer's, tolerance "
                    f"{tolerance:g} ({basis}). A tensor not loaded, a LoRA adapter not "
                    "applied, a replica left on older weights and weights in the wrong dtype "
                    "all look like this (docs/verification.md); synchronizer.verify_weights: "
                    "false turns the check off."
                )
        self.last_seconds = time.perf_counter() - began
        return self.last_seconds
