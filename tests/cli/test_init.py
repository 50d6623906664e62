"""``reinforge init NAME``: a starter project that explores and evaluates as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from reinforge.cli.init_cmd import starter_files, workflow_name
from reinforge.cli.main import app
from reinforge.cli.templates.starter import arithmetic_rows


def reinforge(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, in ``cwd`` (a fresh process: the plugin is new)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "reinforge.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**env, "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``reinforge init demo-agent`` in an empty folder; returns that folder."""
    cwd = tmp_path_factory.mktemp("init")
    proc = reinforge(["init", "demo-agent"], cwd)
    assert proc.returncode == 0, proc.stderr
    assert "next: reinforge explore -c demo-agent/config.yaml" in proc.stdout
    return cwd


def test_init_writes_workflow_config_and_data(project: Path) -> None:
    folder = project / "demo-agent"
    names = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert names == [
        "README.md",
        "config.yaml",
        "data/test.jsonl",
        "data/train.jsonl",
        "workflow.py",
    ]
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["plugins"] == ["workflow.py"]
    assert config["model"]["engine"] == "mock"
    assert "# engine: hf" in (folder / "config.yaml").read_text()  # the commented switch
    assert config["buffer"]["explorer_input"]["taskset"]["default_workflow_type"] == (
        "demo_agent_arithmetic"
    )
    train = [json.loads(line) for line in (folder / "data/train.jsonl").read_text().splitlines()]
    assert 24 <= len(train) <= 100 and {"question", "answer"} <= set(train[0])


def test_the_starter_explores(project: Path) -> None:
    proc = reinforge(["explore", "-c", "demo-agent/config.yaml"], project)
    assert proc.returncode == 0, proc.stderr
    assert "explored:" in proc.stdout and "experiences stored" in proc.stdout
    accuracy = float(proc.stdout.split("accuracy:")[1].split()[0])
    assert 0.5 < accuracy < 0.95  # the mock engine is off by one a quarter of the time
    assert (project / "runs" / "demo-agent" / "starter" / "buffer.db").is_file()


def test_the_starter_evaluates(project: Path) -> None:
    proc = reinforge(["eval", "-c", "demo-agent/config.yaml"], project)
    assert proc.returncode == 0, proc.stderr
    assert "eval/test/mean@4:" in proc.stdout


def test_the_starter_config_refuses_training_with_the_mock_engine(project: Path) -> None:
    proc = reinforge(["run", "-c", "demo-agent/config.yaml"], project)
    assert proc.returncode == 2
    assert "needs model.engine: hf or vllm" in proc.stderr


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "notes.txt").write_text("mine")
    result = CliRunner().invoke(app, ["init", str(tmp_path / "taken")])
    assert result.exit_code == 2
    assert "already exists and is not empty" in result.output
    assert sorted(p.name for p in (tmp_path / "taken").iterdir()) == ["notes.txt"]


def test_init_fills_an_existing_empty_folder(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["init", str(tmp_path / "empty")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "empty" / "config.yaml").is_file()


def test_the_generated_workflow_reads_the_final_number(tmp_path: Path) -> None:
    files = starter_files(tmp_path / "p")
    namespace: dict[str, Any] = {}
    exec(compile(files["workflow.py"], "workflow.py", "exec"), namespace)
    final_answer = namespace["final_answer"]
    assert final_answer("so \\boxed{12}") == "12"  # the mock engine's style
    assert final_answer("\\boxed{3} no, \\boxed{-4}") == "-4"
    assert final_answer("7 * 8 = 56") == "56"  # a plain answer counts too
    assert final_answer("I do not know.") is None


def test_names_and_data_are_well_formed() -> None:
    assert workflow_name("My Agent!") == "my_agent_arithmetic"
    assert workflow_name("---") == "starter_arithmetic"
    rows = arithmetic_rows(50, seed=3)
    assert rows == arithmetic_rows(50, seed=3)  # the same data every time
    for row in rows:
        a, op, b = row["question"].removeprefix("What is ").removesuffix("?").split()
        assert int(row["answer"]) == eval(f"{a} {op} {b}")
