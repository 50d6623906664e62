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
    monkeypatch.setenv("RF_SECRET_URL", "http://user:pw@host")
    data = dumped(tmp_path, overrides=["model.openai.base_url=${oc.env:RF_SECRET_URL}"])
    assert data["model"]["openai"]["base_url"] == MASK
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
