"""Running an AgentScope workflow through ``reinforge explore`` on the scripted mock engine."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

pytest.importorskip("agentscope")

ARITHMETIC = [
    {"question": "What is 2 + 3?", "answer": "5"},
    {"question": "What is 7 * 6?", "answer": "42"},
    {"question": "What is 9 - 4?", "answer": "5"},
    {"question": "What is 1 + 1?", "answer": "2"},
]


class Explored:
    """What one ``reinforge explore`` left behind."""

    def __init__(self, exit_code: int, output: str, run_dir: Path) -> None:
        self.exit_code = exit_code
        self.output = output
        storage = SQLiteExperienceStorage(run_dir / "buffer.db")
        try:
            self.experiences = storage.read()
            self.records = storage.task_results()
        finally:
            storage.close()

    def by_question(self) -> dict[str, list[Any]]:
        """The experiences of each question (the first user turn of their prompt)."""
        out: dict[str, list[Any]] = {}
        for exp in self.experiences:
            question = next(m["content"] for m in exp.messages if m["role"] == "user")
            if not isinstance(question, str):  # content parts
                question = "".join(part.get("text", "") for part in question)
            out.setdefault(question, []).append(exp)
        return out


@pytest.fixture
def explore(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Explored]:
    def run(
        workflow: str,
        replies: dict[str, str] | None,
        *,
        rows: list[dict[str, Any]] = ARITHMETIC,
        workflow_args: dict[str, Any] | None = None,
        repeat_times: int = 2,
        mock: dict[str, Any] | None = None,
        plugins: list[str] = (),  # type: ignore[assignment]
        auxiliary_models: list[dict[str, Any]] | None = None,
        rollout_args: dict[str, Any] | None = None,
    ) -> Explored:
        tmp_path = tmp_path_factory.mktemp("explore")  # a fresh run per call
        with open(tmp_path / "tasks.jsonl", "w") as fh:
            for row in rows:
                fh.write(json.dumps(row) + "\n")
        config = {
            "project": "agentscope",
            "name": "t",
            "plugins": list(plugins),
            "model": {
                "model_path": "mock",
                "engine": "mock",
                "max_response_tokens": 200,
                "max_model_len": 8192,
                "mock": mock or {"replies": replies},
            },
            "buffer": {
                "batch_size": len(rows),
                "total_steps": 1,
                "explorer_input": {
                    "taskset": {
                        "path": str(tmp_path / "tasks.jsonl"),
                        "format": {"prompt_key": "question", "response_key": "answer"},
                        "repeat_times": repeat_times,
                        "default_workflow_type": workflow,
                        "workflow_args": workflow_args or {},
                        "rollout_args": rollout_args or {},
                    }
                },
            },
            "explorer": {
                "runner_concurrency": 4,
                "max_timeout": 60,
                "max_retry_times": 0,
                "eval_on_start": False,
                "rollout_model": {"enable_history": True},
                "auxiliary_models": auxiliary_models or [],
            },
            "monitor": {"progress": False, "tensorboard": False, "plot": False},
        }
        (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        run_dir = tmp_path / "run"
        result = CliRunner().invoke(
            app, ["explore", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
        )
        return Explored(result.exit_code, result.output, run_dir)

    return run
