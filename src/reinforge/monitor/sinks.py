"""Metric sinks: where step metrics go besides the console.

JSONL and TensorBoard are always on by default; Weights & Biases and MLflow are
used when enabled in the config (``monitor.wandb`` / ``monitor.mlflow``; install
``reinforge[monitor]``). Every sink receives ``{"step": N, name: value, ...}``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class MetricSink(Protocol):
    def log(self, metrics: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


def _numeric(metrics: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if k != "step" and isinstance(v, int | float)}


class TensorBoardSink:
    def __init__(self, log_dir: str | Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(log_dir=str(log_dir))

    def log(self, metrics: dict[str, Any]) -> None:
        step = int(metrics.get("step", 0))
        for key, value in _numeric(metrics).items():
            self.writer.add_scalar(key, value, step)
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

    def log(self, metrics: dict[str, Any]) -> None:
        self.run.log(_numeric(metrics), step=int(metrics.get("step", 0)))

    def close(self) -> None:
        self.run.finish()


class MlflowSink:
    def __init__(
        self, tracking_uri: str, experiment: str, run_name: str, params: dict[str, Any]
    ) -> None:
        try:
            import mlflow
        except ImportError as exc:
            raise ImportError(
                "monitor.mlflow.enabled needs mlflow: pip install 'reinforge[monitor]'"
            ) from exc
        self.mlflow = mlflow
        mlflow.set_tracking_uri(tracking_uri)
        mlflow.set_experiment(experiment)
        self.run = mlflow.start_run(run_name=run_name)
        mlflow.log_params({k: str(v)[:250] for k, v in params.items()})

    def log(self, metrics: dict[str, Any]) -> None:
        clean = {k.replace("@", "_at_"): v for k, v in _numeric(metrics).items()}
        self.mlflow.log_metrics(clean, step=int(metrics.get("step", 0)))

    def close(self) -> None:
        self.mlflow.end_run()
