"""Metric sinks: where step metrics go besides the console.

JSONL and TensorBoard are always on by default; Weights & Biases and MLflow are
used when enabled in the config (``monitor.wandb`` / ``monitor.mlflow``; install
``reinforge[monitor]``). Every sink receives ``{"step": N, name: value, ...}``.

Sinks may also have ``log_samples(step, samples)`` (see ``SampleSink``): a few
completions of an explore step, as made by ``monitor.samples.sample_completions``.
TensorBoard shows them as text; the others accept and ignore them.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse


class MetricSink(Protocol):
    def log(self, metrics: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class SampleSink(Protocol):
    """A sink that can also show sample completions (optional: the reporter checks)."""

    def log_samples(self, step: int, samples: list[dict[str, Any]]) -> None: ...


def _numeric(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if k != "step" and isinstance(v, int | float)}


class TensorBoardSink:
    def __init__(self, log_dir: str | Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.log_dir = str(log_dir)
        self.writer = SummaryWriter(log_dir=self.log_dir)

    def rewind(
        self, explore_step: int, train_step: int, kept: list[dict[str, Any]] | None = None
    ) -> None:
        """Resume: purge the events a resumed run logs again, so each step is logged once.

        TensorBoard purges every tag from one step on, so with ``kept`` (the rows the
        JSONL file keeps) events from the earlier of the two steps on are purged and
        the kept rows after it (explore and eval rows) are written again. Without it,
        events after ``explore_step`` are purged (training rows of the steps in between
        may then appear twice).
        """
        from torch.utils.tensorboard import SummaryWriter

        start = (min(explore_step, train_step) if kept is not None else explore_step) + 1
        self.writer.close()
        self.writer = SummaryWriter(log_dir=self.log_dir, purge_step=start)
        for row in kept or []:
            if int(row.get("step", 0)) >= start:
                self.log({k: v for k, v in row.items() if k != "time"})

    def log(self, metrics: dict[str, Any]) -> None:
        step = int(metrics.get("step", 0))
        for key, value in _numeric(metrics).items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def log_samples(self, step: int, samples: list[dict[str, Any]], tag: str = "samples") -> None:
        """The samples of ``step`` as one Markdown text summary (TensorBoard's Text tab)."""
        if not samples:
            return
        from reinforge.monitor.samples import samples_markdown

        self.writer.add_text(tag, samples_markdown(samples), step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    def __init__(
        self,
        run_dir: str | Path,
        project: str,
        name: str,
        entity: str | None,
        mode: str,
        config: dict,
    ) -> None:
        try:
            import wandb
        except ImportError as exc:
            raise ImportError(
                "monitor.wandb.enabled needs wandb: pip install 'reinforge[monitor]'"
            ) from exc
        self.run = wandb.init(
            project=project, name=name, entity=entity, mode=mode, dir=str(run_dir), config=config
        )
        # Steps are a metric, not wandb's own step counter: that one must only grow,
        # and wandb silently drops rows logged for an earlier step (e.g. the trainer's
        # step N-1 after the explorer's step N when sync_offset > 0).
        self.run.define_metric("step")
        self.run.define_metric("*", step_metric="step")

    def log(self, metrics: dict[str, Any]) -> None:
        self.run.log({**_numeric(metrics), "step": int(metrics.get("step", 0))})

    def log_samples(self, step: int, samples: list[dict[str, Any]]) -> None:
        """Not shown in W&B (yet): samples go to TensorBoard."""

    def close(self) -> None:
        self.run.finish()


_MLFLOW_BAD_CHARS = re.compile(r"[^A-Za-z0-9_\-. :/]")


def mlflow_metric_name(key: str) -> str:
    """``key`` with the characters MLflow refuses in names replaced (``@`` → ``_at_``)."""
    return _MLFLOW_BAD_CHARS.sub("_", key.replace("@", "_at_"))


class MlflowSink:
    """Logs to an MLflow tracking store through its client (no process-global active run)."""

    def __init__(
        self, tracking_uri: str, experiment: str, run_name: str, params: dict[str, Any]
    ) -> None:
        try:
            from mlflow.exceptions import MlflowException
            from mlflow.tracking import MlflowClient
        except ImportError as exc:
            raise ImportError(
                "monitor.mlflow.enabled needs mlflow: pip install 'reinforge[monitor]'"
            ) from exc
        if urlparse(tracking_uri).scheme in ("", "file"):
            # MLflow 3 refuses the local file store unless asked to keep it; it is what
            # the default RUN_DIR/mlruns uses (the database store needs extra packages).
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self.client = MlflowClient(tracking_uri)
        found = self.client.get_experiment_by_name(experiment)
        if found is None:
            try:
                experiment_id = self.client.create_experiment(experiment)
            except MlflowException:  # created meanwhile by a process sharing the store
                found = self.client.get_experiment_by_name(experiment)
                if found is None:
                    raise
                experiment_id = found.experiment_id
        else:
            experiment_id = found.experiment_id
        self.run_id = self.client.create_run(experiment_id, run_name=run_name).info.run_id
        from mlflow.entities import Param

        self.client.log_batch(
            self.run_id, params=[Param(k, str(v)[:250]) for k, v in params.items()]
        )

    def log(self, metrics: dict[str, Any]) -> None:
        from mlflow.entities import Metric

        step = int(metrics.get("step", 0))
        now = int(time.time() * 1000)
        batch = [Metric(mlflow_metric_name(k), v, now, step) for k, v in _numeric(metrics).items()]
        if batch:
            self.client.log_batch(self.run_id, metrics=batch)

    def log_samples(self, step: int, samples: list[dict[str, Any]]) -> None:
        """Not shown in MLflow (yet): samples go to TensorBoard."""

    def close(self) -> None:
        self.client.set_terminated(self.run_id)
