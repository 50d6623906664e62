"""``examples/email_search/grpo.yaml`` explores through the CLI with mock engines."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from reinforge.cli.main import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "email_search"


def test_email_search_example_explores_with_mock_engines(tmp_path: Path) -> None:
    cfg = yaml.safe_load((EXAMPLE / "grpo.yaml").read_text())
    cfg["mode"] = "explore"
    # a mock agent that searches once, then gives up: a valid run worth 0 (+ credit)
    search = (
        '<tool_call>[{"name": "search_emails", "arguments": {"keywords": ["invoice"]}}]</tool_call>'
    )
    give_up = (
        '<tool_call>[{"name": "return_final_answer", '
        '"arguments": {"answer": "I don\'t know", "sources": []}}]</tool_call>'
    )
    cfg["model"] = {
        "engine": "mock",
        "max_model_len": 65536,
        "mock": {"replies": {'"snippet": ': give_up, ".": search}},
    }
    judge = cfg["explorer"]["auxiliary_models"][0]
    for key in ("model_path", "engine"):
        judge.pop(key)
    judge.update(engine="mock", mock={"replies": ['{"accept": false}']})
    taskset = cfg["buffer"]["explorer_input"]["taskset"]
    taskset["path"] = str(EXAMPLE / taskset["path"])
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = CliRunner().invoke(app, ["explore", "-c", str(path), "--run-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "explore/tasks" in r]
    assert len(steps) == 2
    assert all(r["explore/workflow/said_dont_know/mean"] == 1.0 for r in steps)
    # two turns when the search finds mail in that inbox; all four when it never does
    assert all(2.0 <= r["explore/workflow/agent_turns/mean"] <= 4.0 for r in steps)
