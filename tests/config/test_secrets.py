"""What a run writes down about its config (config.json, W&B, MLflow) holds no secrets."""

import json

from reinforge.config import load_config
from reinforge.config.secrets import MASK

BASE = """
project: p
name: n
model:
  engine: mock
buffer:
  batch_size: 4
  explorer_input:
    taskset:
      path: data.jsonl
      format: {prompt_key: question, response_key: answer}
      default_workflow_type: simple_workflow
      workflow_args: {secret_key: s1, hf_token: s2, db_password: s3, private_key: s4,
                      Authorization: Bearer s5, key: s6, max_tokens: 7, tokenizer_path: t}
"""


def dumped(tmp_path, text=BASE, overrides=()):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return load_config(path, list(overrides)).public_dump()


def test_credential_named_values_are_masked_and_others_kept(tmp_path):
    taskset = dumped(tmp_path)["buffer"]["explorer_input"]["taskset"]
    args = taskset["workflow_args"]
    for key in ("secret_key", "hf_token", "db_password", "private_key", "Authorization", "key"):
        assert args[key] == MASK, key
    assert args["max_tokens"] == 7 and args["tokenizer_path"] == "t"
    assert taskset["format"]["prompt_key"] == "question"


def test_env_values_set_by_an_override_are_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("RF_SECRET_URL", "http://host:1/v1")
    data = dumped(tmp_path, overrides=["model.openai.base_url=${oc.env:RF_SECRET_URL}"])
    assert data["model"]["openai"]["base_url"] == MASK  # the variable's name says secret


def test_credentials_in_a_url_are_masked_and_the_rest_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("RF_SERVER_URL", "http://user:pw@host:1/v1")
    data = dumped(tmp_path, overrides=["model.openai.base_url=${oc.env:RF_SERVER_URL}"])
    assert data["model"]["openai"]["base_url"] == "http://***@host:1/v1"
    assert "user:pw" not in json.dumps(data)


def test_values_interpolated_from_a_secret_are_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("RF_SECRET", "sk-123456")
    text = BASE.replace(
        "  engine: mock\n",
        "  engine: mock\n  openai: {api_key: '${oc.env:RF_SECRET}'}\n",
    ).replace("key: s6", "copied: '${model.openai.api_key}'")
    data = dumped(tmp_path, text)
    assert "sk-123456" not in json.dumps(data)
    assert data["buffer"]["explorer_input"]["taskset"]["workflow_args"]["copied"] == MASK


def test_env_values_that_are_not_secrets_are_kept(tmp_path, monkeypatch):
    """A model path (or URL, or any setting) read from the environment is written in
    clear: ``reinforge export`` and the model card read it back from config.json."""
    monkeypatch.setenv("RF_MODEL", "/models/my-policy")
    monkeypatch.setenv("RF_BASE_URL", "http://gpu-box:8000/v1")
    text = BASE.replace(
        "  engine: mock\n",
        "  engine: mock\n  model_path: ${oc.env:RF_MODEL,smollm2-135m-instruct}\n"
        "  openai: {base_url: '${oc.env:RF_BASE_URL}'}\n",
    ).replace("key: s6", "model_copy: '${model.model_path}'")
    data = dumped(tmp_path, text)
    assert data["model"]["model_path"] == "/models/my-policy"
    assert data["model"]["openai"]["base_url"] == "http://gpu-box:8000/v1"
    args = data["buffer"]["explorer_input"]["taskset"]["workflow_args"]
    assert args["model_copy"] == "/models/my-policy"
    assert args["secret_key"] == MASK  # credential-named keys stay masked


def test_env_variables_named_like_credentials_are_masked_wherever_used(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abc123")
    monkeypatch.setenv("RF_HF_TOKEN", "hf_xyz789")
    data = dumped(
        tmp_path,
        overrides=[
            "model.openai.api_key=${oc.env:OPENAI_API_KEY}",
            "buffer.explorer_input.taskset.workflow_args.header=${oc.env:RF_HF_TOKEN}",
        ],
    )
    assert data["model"]["openai"]["api_key"] == MASK
    assert data["buffer"]["explorer_input"]["taskset"]["workflow_args"]["header"] == MASK
    assert "sk-abc123" not in json.dumps(data) and "hf_xyz789" not in json.dumps(data)


def test_a_model_path_from_the_environment_survives_into_config_json_and_export(
    tmp_path, monkeypatch, tiny_model_path
):
    """The bug this guards: ``model_path: ${oc.env:REINFORGE_MODEL,...}`` (as many
    example configs read it) was written to config.json as ``***``, so ``reinforge
    export`` of the run could not find its base model."""
    from typer.testing import CliRunner

    from reinforge.cli.main import app

    monkeypatch.setenv("REINFORGE_MODEL", "tiny-random-smollm2")
    monkeypatch.setenv("RF_TEST_API_KEY", "sk-not-in-config-json")
    (tmp_path / "tasks.jsonl").write_text(
        "".join(
            json.dumps({"question": f"{i} + 1 =", "answer": str(i + 1)}) + "\n" for i in range(2)
        )
    )
    (tmp_path / "cfg.yaml").write_text(
        """
project: secrets
name: env_model
model:
  model_path: ${oc.env:REINFORGE_MODEL,smollm2-135m-instruct}
  engine: hf
  max_response_tokens: 4
  hf: {batch_window_ms: 2}
  openai: {api_key: '${oc.env:RF_TEST_API_KEY}'}
buffer:
  batch_size: 2
  total_steps: 1
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question, response_key: answer}
      repeat_times: 2
      default_workflow_type: math_workflow
  experience_pipeline: {operators: []}
explorer: {eval_on_start: false}
monitor: {progress: false, tensorboard: false, plot: false}
"""
    )
    run_dir = tmp_path / "run"
    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, (result.exception, result.output[-3000:])
    saved = json.loads((run_dir / "config.json").read_text())
    assert saved["model"]["model_path"] == "tiny-random-smollm2"
    assert saved["model"]["openai"]["api_key"] == MASK
    assert "sk-not-in-config-json" not in (run_dir / "config.json").read_text()

    monkeypatch.delenv("REINFORGE_MODEL")  # export reads the base model from config.json
    out = tmp_path / "exported"
    export = CliRunner().invoke(app, ["export", str(run_dir), str(out)])
    assert export.exit_code == 0, (export.exception, export.output[-3000:])
    assert (out / "config.json").is_file() and list(out.glob("*.safetensors"))
