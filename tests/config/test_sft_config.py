"""The SFT keys of the config: ``mode: sft`` and its data section, ``trainer.sft_aux``,
``model.init_from``; what ``check_mode`` refuses before any model loads."""

from __future__ import annotations

import re

import pytest

from reinforge.config import ConfigError, load_config
from reinforge.launcher.modes import check_mode

SFT = """
mode: sft
model: {model_path: tiny-random-smollm2}
buffer:
  batch_size: 4
  trainer_input:
    experience_buffer:
      path: demos.jsonl
      format: {messages_key: conversation, tools_key: functions}
"""


def _load(tmp_path, text: str, overrides: list[str] | None = None):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    return load_config(path, overrides)


def test_mode_sft_selects_the_sft_loss_and_reads_its_section(tmp_path):
    cfg = _load(tmp_path, SFT)
    assert cfg.trainer.algorithm == "sft"
    data = cfg.buffer.trainer_input.experience_buffer
    assert data.path == "demos.jsonl" and data.format.messages_key == "conversation"
    assert data.format.tools_key == "functions" and data.shuffle and data.length_bucket_window == 16
    check_mode(cfg)


def test_mode_sft_by_override_and_an_explicit_other_algorithm(tmp_path):
    rl = SFT.replace("mode: sft\n", "")
    assert _load(tmp_path, rl, ["mode=sft"]).trainer.algorithm == "sft"
    assert _load(tmp_path, rl).trainer.algorithm == "grpo"
    with pytest.raises(
        ConfigError, match=re.escape("mode 'sft' trains with trainer.algorithm: sft")
    ):
        _load(tmp_path, SFT + "trainer: {algorithm: grpo}\n")


def test_check_mode_refuses_sft_without_data_or_with_sft_aux(tmp_path):
    with pytest.raises(
        ConfigError, match=re.escape("needs buffer.trainer_input.experience_buffer")
    ):
        check_mode(_load(tmp_path, "mode: sft\n"))
    with_aux = SFT + "trainer: {sft_aux: {path: demos.jsonl}}\n"
    with pytest.raises(ConfigError, match=re.escape("remove trainer.sft_aux")):
        check_mode(_load(tmp_path, with_aux))
    with pytest.raises(ConfigError, match="hf or vllm"):
        check_mode(_load(tmp_path, SFT, ["model.engine=mock"]))


def test_sft_aux_and_init_from(tmp_path):
    cfg = _load(
        tmp_path,
        "model: {init_from: runs/agent/sft}\n"
        "trainer: {sft_aux: {path: d.jsonl, weight: 0.2, batch_size: 3}}\n",
    )
    assert cfg.model.init_from == "runs/agent/sft"
    aux = cfg.trainer.sft_aux
    assert (aux.path, aux.weight, aux.batch_size, aux.format.messages_key) == (
        "d.jsonl",
        0.2,
        3,
        "messages",
    )
    assert cfg.trainer.algorithm == "grpo"
    with pytest.raises(ConfigError, match="weight"):
        _load(tmp_path, "trainer: {sft_aux: {path: d.jsonl, weight: -1}}\n")
    with pytest.raises(ConfigError, match="path"):
        _load(tmp_path, "trainer: {sft_aux: {weight: 0.1}}\n")
