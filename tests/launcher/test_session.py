"""``RunSession``: what a run writes into its run directory, and who may read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reinforge.config import load_config
from reinforge.launcher.session import RunSession, make_sinks

CONFIG = """
project: s
name: t
run_dir: run
model:
  engine: mock
  openai: {api_key: '${oc.env:RF_TEST_KEY}'}
buffer:
  batch_size: 2
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      default_workflow_type: simple_workflow
      workflow_args: {hf_token: tok-abcdef}
monitor:
  progress: false
  tensorboard: false
"""


@pytest.fixture
def cfg_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RF_TEST_KEY", "sk-from-env")
    (tmp_path / "tasks.jsonl").write_text(json.dumps({"question": "1+1", "answer": "2"}) + "\n")
    (tmp_path / "cfg.yaml").write_text(CONFIG)
    return tmp_path / "cfg.yaml"


def test_mlflow_params_hold_no_secrets(cfg_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    cfg = load_config(cfg_path, ["monitor.mlflow.enabled=true", "monitor.jsonl=false"])
    run_dir = cfg_path.parent / "run"
    for sink in make_sinks(cfg, run_dir):
        sink.close()
    client = MlflowClient((run_dir / "mlruns").resolve().as_uri())
    (run,) = client.search_runs([client.get_experiment_by_name("s").experiment_id])
    params = json.dumps(run.data.params)
    assert "sk-from-env" not in params and "tok-abcdef" not in params
    assert "***" in run.data.params["model.openai"]


def test_the_buffer_and_its_journal_are_private_from_the_start(cfg_path: Path) -> None:
    """SQLite gives the -wal/-shm files the database file's mode: the database is
    created 0600 before SQLite opens it, so no file of the buffer is ever readable
    by others, not even while the run writes."""
    cfg = load_config(cfg_path)
    cfg.run_dir = str(cfg_path.parent / "run")
    session = RunSession.open(cfg)
    try:
        session.storage.write([], {"probe": 1})
        files = [p for p in cfg.storage_path.parent.iterdir() if p.name.startswith("buffer.db")]
        assert {p.name for p in files} >= {"buffer.db", "buffer.db-wal"}
        for path in [*files, session.run_dir / "metrics.jsonl", session.run_dir / "config.json"]:
            assert path.stat().st_mode & 0o777 == 0o600, path.name
        assert session.run_dir.stat().st_mode & 0o777 == 0o700
    finally:
        session.close()
