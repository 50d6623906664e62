"""Unknown config keys: the message names the file, the full key path and the closest keys."""

from __future__ import annotations

from pathlib import Path

import pytest

from reinforge.config import ConfigError, load_config
from reinforge.config.loader import unknown_key_hint
from reinforge.config.schema import known_keys

BASE = """
model: {engine: mock}
buffer:
  batch_size: 4
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {prompt_key: question}
    eval_tasksets:
      - {name: ev, path: tasks.jsonl}
"""


def error_of(tmp_path: Path, text: str, overrides: list[str] | None = None) -> str:
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        (
            "batch_size: 4",
            "batch_sise: 4",
            "buffer.batch_sise: unknown key - did you mean 'buffer.batch_size'?",
        ),
        ("buffer:", "bufer:", "bufer: unknown key - did you mean 'buffer'?"),
        (
            "prompt_key: question",
            "promt_key: question",
            "buffer.explorer_input.taskset.format.promt_key: unknown key - did you mean "
            "'buffer.explorer_input.taskset.format.prompt_key'?",
        ),
        (
            "{name: ev,",
            "{nmae: ev,",
            "buffer.explorer_input.eval_tasksets.0.nmae: unknown key - did you mean "
            "'buffer.explorer_input.eval_tasksets.0.name'?",
        ),
    ],
    ids=["section", "top-level", "nested", "list-item"],
)
def test_unknown_key_names_file_path_and_closest_key(
    tmp_path: Path, old: str, new: str, said: str
) -> None:
    message = error_of(tmp_path, BASE.replace(old, new))
    assert message == f"{tmp_path / 'cfg.yaml'}: {said}"


def test_an_override_with_a_typo_gets_a_hint_too(tmp_path: Path) -> None:
    message = error_of(tmp_path, BASE, ["trainer.lora.alhpa=8"])
    assert message == (
        f"{tmp_path / 'cfg.yaml'}: trainer.lora.alhpa: unknown key - "
        "did you mean 'trainer.lora.alpha'?"
    )


def test_no_hint_when_nothing_is_close(tmp_path: Path) -> None:
    message = error_of(tmp_path, BASE.replace("batch_size: 4", "batch_size: 4\n  zzzz: 1"))
    assert message.endswith("buffer.zzzz: unknown key")


def test_each_unknown_key_is_a_line_of_its_own(tmp_path: Path) -> None:
    text = BASE.replace("batch_size: 4", "batch_sise: 4").replace("engine:", "engnie:")
    lines = error_of(tmp_path, text).splitlines()
    assert len(lines) == 2
    assert any("'model.engine'" in line for line in lines)
    assert any("'buffer.batch_size'" in line for line in lines)


def test_known_keys_follow_the_schema() -> None:
    assert "batch_size" in (known_keys(("buffer", "x")) or [])
    assert "r" in (known_keys(("trainer", "lora", "x")) or [])
    # both the name and Trinity's alias are accepted
    keys = known_keys(("buffer", "explorer_input", "taskset", "x")) or []
    assert {"default_workflow_type", "default_workflow"} <= set(keys)
    assert "name" in (known_keys(("explorer", "auxiliary_models", 0, "x")) or [])
    # a free-form mapping is not a config section
    assert known_keys(("buffer", "explorer_input", "taskset", "workflow_args", "x")) is None
    assert unknown_key_hint(("buffer", "explorer_input", "taskset", "workflow_args", "x")) == ""
