"""Monitoring: PNG curves from metrics.jsonl, the plot command, TensorBoard, MLflow and W&B sinks."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from reinforge.monitor import JsonlMetrics, MlflowSink, TensorBoardSink, WandbSink, plot_run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _rows() -> list[dict[str, float]]:
    """What a short run logs: explore, train and eval lines, the eval one out of step."""
    rows: list[dict[str, float]] = []
    for step in range(1, 5):
        rows.append(
            {
                "step": step,
                "explore/reward_mean": 0.1 * step,
                "explore/accuracy": 0.05 * step,
                "explore/response_length": 10.0 + step,
                "explore/step_time": 1.5,
            }
        )
        rows.append(
            {
                "step": step,
                "train/loss": 1.0 / step,
                "train/policy/loss": 0.9 / step,
                "train/policy/approx_kl_k3": 0.01 * step,
                "train/kl_loss/value": 0.02 * step,
                "train/entropy/value": 3.0 - 0.1 * step,
                "train/step_time": 2.0,
            }
        )
        if step % 2 == 0:
            rows.append({"step": step, "eval/test/accuracy": 0.2, "eval/test/mean@4": 0.25})
    return rows


def _write_metrics(run_dir: Path, rows: list[dict[str, float]]) -> None:
    sink = JsonlMetrics(run_dir / "metrics.jsonl")
    for row in rows:
        sink.log(row)


EXPECTED_PNGS = {
    "reward.png",
    "explore_accuracy.png",
    "eval_accuracy.png",
    "policy_loss.png",
    "total_loss.png",
    "KL.png",
    "entropy.png",
    "response_length.png",
    "step_time.png",
    "summary.png",
}


def test_plot_run_writes_every_panel(tmp_path: Path) -> None:
    _write_metrics(tmp_path, _rows())
    paths = plot_run(tmp_path)
    assert {p.name for p in paths} == EXPECTED_PNGS
    assert paths[-1].name == "summary.png"
    for path in paths:
        assert path.parent == tmp_path / "plots"
        data = path.read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 1000, path
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == sorted(EXPECTED_PNGS)


def test_plot_only_panels_with_data_and_kl_from_ratio_metrics(tmp_path: Path) -> None:
    """A preset without a KL loss still gets a KL panel (from the approx-KL metrics);
    a run that logs only the total loss gets no policy-loss panel."""
    rows = [{"step": 1, "train/loss": 0.5, "train/policy/approx_kl_k1": 0.01}]
    _write_metrics(tmp_path, rows)
    names = {p.name for p in plot_run(tmp_path, tmp_path / "out")}
    assert names == {"total_loss.png", "KL.png", "summary.png"}


def test_torn_metrics_line_is_skipped(tmp_path: Path) -> None:
    """A run killed mid-append leaves a torn line; a resumed run appends after it."""
    _write_metrics(tmp_path, _rows()[:2])
    with open(tmp_path / "metrics.jsonl", "a") as fh:
        fh.write('{"step": 3, "explore/rew')  # no newline: the process died here
    _write_metrics(tmp_path, [{"step": 3, "explore/reward_mean": 0.7}])
    rows = JsonlMetrics(tmp_path / "metrics.jsonl").read()
    assert [r["step"] for r in rows] == [1, 1, 3]
    assert rows[-1]["explore/reward_mean"] == 0.7
    assert "reward.png" in {p.name for p in plot_run(tmp_path)}


def test_plot_command(tmp_path: Path) -> None:
    """``reinforge plot`` (in process through typer's runner: no interpreter start-up)."""
    from typer.testing import CliRunner

    from reinforge.cli.main import app

    runner = CliRunner()
    missing = runner.invoke(app, ["plot", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    assert "metrics.jsonl" in missing.stderr and missing.exception is not None
    assert not (tmp_path / "nope").exists()

    _write_metrics(tmp_path / "run", _rows())
    done = runner.invoke(app, ["plot", str(tmp_path / "run"), "--out", str(tmp_path / "pngs")])
    assert done.exit_code == 0, done.output
    assert {Path(line).name for line in done.stdout.split()} == EXPECTED_PNGS
    assert (tmp_path / "pngs" / "summary.png").read_bytes().startswith(PNG_MAGIC)


def test_tensorboard_scalars_read_back(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    sink = TensorBoardSink(tmp_path / "tb")
    for row in _rows():
        sink.log(row)
    sink.close()
    assert list((tmp_path / "tb").glob("events.out.tfevents.*"))
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    assert "train/loss" in acc.Tags()["scalars"]
    assert "eval/test/mean@4" in acc.Tags()["scalars"]
    loss = acc.Scalars("train/loss")
    assert [e.step for e in loss] == [1, 2, 3, 4]
    assert [e.value for e in loss] == pytest.approx([1.0, 0.5, 1 / 3, 0.25])
    assert [e.step for e in acc.Scalars("eval/test/mean@4")] == [2, 4]


def test_mlflow_local_file_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    uri = (tmp_path / "mlruns").resolve().as_uri()
    sink = MlflowSink(uri, "reinforge-test", "run-a", {"trainer.lr": 1e-6, "model.engine": "hf"})
    for row in _rows():
        sink.log(row)
    sink.close()

    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("reinforge-test")
    assert experiment is not None
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == "run-a" and run.info.status == "FINISHED"
    assert run.data.params == {"trainer.lr": "1e-06", "model.engine": "hf"}
    history = client.get_metric_history(run.info.run_id, "train/loss")
    assert [m.step for m in history] == [1, 2, 3, 4]
    assert [m.value for m in history] == pytest.approx([1.0, 0.5, 1 / 3, 0.25])
    assert run.data.metrics["eval/test/mean_at_4"] == 0.25

    # a second sink on the same store joins the existing experiment
    second = MlflowSink(uri, "reinforge-test", "run-b", {})
    second.log({"step": 1, "explore/reward_mean": 1.0})
    second.close()
    assert len(client.search_runs([experiment.experiment_id])) == 2


def test_wandb_offline_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Offline W&B writes its run folder locally (no network); rows logged for an
    earlier step than the last one (trainer lagging the explorer) are kept."""
    pytest.importorskip("wandb")
    for key in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_ENTITY", "WANDB_PROJECT"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("WANDB_CACHE_DIR", str(tmp_path / "cache"))
    sink = WandbSink(tmp_path, "reinforge-test", "run-a", None, "offline", {"trainer": {"lr": 1}})
    sink.log({"step": 3, "explore/reward_mean": 0.5})
    sink.log({"step": 2, "train/lagging_metric_xyz": 1.25})
    sink.close()
    (run_dir,) = (tmp_path / "wandb").glob("offline-run-*")
    (log,) = run_dir.glob("run-*.wandb")
    # wandb's service process writes the file; under load it can still be at it
    # when finish() returns (seen once: only the 7-byte header on disk), so wait
    deadline = time.monotonic() + 60
    data = log.read_bytes()
    while b"train/lagging_metric_xyz" not in data and time.monotonic() < deadline:
        time.sleep(0.2)
        data = log.read_bytes()
    assert b"explore/reward_mean" in data
    assert b"train/lagging_metric_xyz" in data


def test_metrics_jsonl_lines_are_json(tmp_path: Path) -> None:
    _write_metrics(tmp_path, [{"step": 1, "x": 1.0}])
    line = (tmp_path / "metrics.jsonl").read_text().splitlines()[0]
    assert json.loads(line)["x"] == 1.0 and "time" in json.loads(line)
    assert os.path.getsize(tmp_path / "metrics.jsonl") == len(line) + 1


def test_console_warnings_are_plain_text() -> None:
    """Warnings carry workflow errors and paths: brackets are printed, not parsed as markup."""
    import io

    from rich.console import Console

    from reinforge.monitor import ConsoleReporter

    out = io.StringIO()
    reporter = ConsoleReporter(progress=False, console=Console(file=out, width=40))
    message = "task 3 failed: cannot open [/tmp/data] or [bold]x[/bold] " + "y" * 60
    reporter.warn(message)
    assert out.getvalue() == f"warning: {message}\n"


def test_summary_table_shows_brackets_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    from reinforge.monitor import ConsoleReporter

    ConsoleReporter(progress=False).summary("run [/x]", {"buffer": "/data/[/run]", "loss": 0.5})
    out = capsys.readouterr().out
    assert "run [/x]" in out and "/data/[/run]" in out and "0.5" in out


def _resumed_run(run_dir: Path) -> None:
    """Steps 1..4 explored and trained, then a kill; the newest checkpoint holds step 2.
    The resumed run trains steps 3 and 4 again (new values), then explores and trains 5."""
    from reinforge.monitor import ConsoleReporter

    def sinks() -> list:
        return [JsonlMetrics(run_dir / "metrics.jsonl"), TensorBoardSink(run_dir / "tb")]

    first = ConsoleReporter(progress=False, sinks=sinks())
    for step in range(1, 5):
        first.step_done({"step": step, "explore/reward_mean": float(step)})
        first.step_done({"step": step, "train/loss": 1.0})
    first.close()
    resumed = ConsoleReporter(progress=False, sinks=sinks())
    resumed.rewind(4, 2)
    for step in (3, 4):
        resumed.step_done({"step": step, "train/loss": 2.0})
    resumed.step_done({"step": 5, "explore/reward_mean": 5.0})
    resumed.step_done({"step": 5, "train/loss": 2.0})
    resumed.close()


def test_a_resumed_run_logs_each_step_once_in_jsonl_and_tensorboard(tmp_path: Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _resumed_run(tmp_path)
    rows = JsonlMetrics(tmp_path / "metrics.jsonl").read()
    assert [r["step"] for r in rows if "explore/reward_mean" in r] == [1, 2, 3, 4, 5]
    train = [(r["step"], r["train/loss"]) for r in rows if "train/loss" in r]
    assert train == [(1, 1.0), (2, 1.0), (3, 2.0), (4, 2.0), (5, 2.0)]
    acc = EventAccumulator(str(tmp_path / "tb"))
    acc.Reload()
    loss = [(e.step, e.value) for e in acc.Scalars("train/loss")]
    assert loss == [(1, 1.0), (2, 1.0), (3, 2.0), (4, 2.0), (5, 2.0)]
    reward = [(e.step, e.value) for e in acc.Scalars("explore/reward_mean")]
    assert reward == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 4.0), (5, 5.0)]
    assert "time" not in acc.Tags()["scalars"]  # replayed rows carry no JSONL bookkeeping


def test_metrics_jsonl_is_private(tmp_path: Path) -> None:
    _resumed_run(tmp_path)  # created, then rewritten by the rewind
    assert (tmp_path / "metrics.jsonl").stat().st_mode & 0o777 == 0o600
