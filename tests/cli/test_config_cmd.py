"""``reinforge config``: the resolved YAML of a config file, and the JSON schema for editors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.config import load_config

REPO = Path(__file__).resolve().parents[2]
#: reinforge configs (a Kubernetes manifest among the examples is not one)
EXAMPLES = sorted(
    p for p in (REPO / "examples").glob("**/*.yaml") if "\napiVersion:" not in p.read_text()
)

CONFIG = """
project: cfgtest
model:
  engine: mock
  openai: {api_key: "${oc.env:RF_CFG_SECRET}"}
buffer:
  batch_size: 4
  explorer_input:
    taskset:
      path: tasks.jsonl
      default_workflow: simple_workflow
"""


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.output


@pytest.fixture
def cfg_file(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(CONFIG)
    return path


def test_resolved_fills_defaults_applies_overrides_and_masks_secrets(cfg_file: Path) -> None:
    code, out = invoke(
        "config",
        "-c",
        str(cfg_file),
        "--resolved",
        "--set",
        "buffer.total_steps=3",
        env={"RF_CFG_SECRET": "sk-top-secret"},
    )
    assert code == 0, out
    assert "sk-top-secret" not in out
    assert out.startswith(f"# {cfg_file}, resolved")  # the header says where it came from
    data = yaml.safe_load(out)
    assert data["model"]["openai"]["api_key"] == "***"
    assert data["buffer"]["total_steps"] == 3 and data["buffer"]["batch_size"] == 4
    assert data["trainer"]["algorithm"] == "grpo"  # a default filled in
    assert data["run_dir"] == str(Path("runs") / "cfgtest" / "run")
    taskset = data["buffer"]["explorer_input"]["taskset"]
    assert taskset["default_workflow_type"] == "simple_workflow"  # the alias, resolved


def test_resolved_is_the_default_and_loads_back_to_the_same_config(
    cfg_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RF_CFG_SECRET", "x")
    code, out = invoke("config", "-c", str(cfg_file))
    assert code == 0, out
    again = tmp_path / "again.yaml"
    again.write_text(out)
    original = load_config(cfg_file).model_dump()
    reloaded = load_config(again).model_dump()
    original["model"]["openai"]["api_key"] = "***"  # masked in the output
    original["run_dir"] = reloaded["run_dir"]  # spelled out in the output
    assert reloaded == original


def test_config_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("buffer:\n  batch_sise: 3\n")
    code, out = invoke("config", "-c", str(bad))
    assert code == 2
    assert f"{bad}: buffer.batch_sise: unknown key - did you mean 'buffer.batch_size'?" in out
    code, out = invoke("config", "-c", str(tmp_path / "missing.yaml"))
    assert code == 2 and "does not exist" in out


@pytest.mark.parametrize(
    "args", [[], ["--schema", "-c", "x.yaml"], ["--schema", "--resolved"]], ids=str
)
def test_usage_mistakes_exit_2(args: list[str]) -> None:
    code, out = invoke("config", *args)
    assert code == 2 and out.count("error:") == 1


def test_schema_is_json_schema_of_the_config() -> None:
    code, out = invoke("config", "--schema")
    assert code == 0
    schema = json.loads(out)
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert schema["additionalProperties"] is False
    assert {"model", "buffer", "trainer", "explorer", "plugins"} <= set(schema["properties"])
    assert "config_dir" not in schema["properties"]  # filled in by the loader, never by users
    taskset = schema["$defs"]["TasksetConfig"]["properties"]
    assert {"default_workflow_type", "default_workflow"} <= set(taskset)  # name and alias


def test_every_example_config_validates_against_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    _, out = invoke("config", "--schema")
    validator = jsonschema.Draft202012Validator(json.loads(out))
    validator.check_schema(validator.schema)
    assert EXAMPLES
    for path in EXAMPLES:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert not errors, (path, errors)
    typo = {"buffer": {"batch_sise": 3}}
    assert list(validator.iter_errors(typo))  # an editor flags the typo
