"""A ``data_selector`` (or Trinity-RFT 0.3.2-0.5.1's ``task_selector``) on an eval
taskset is a config error naming the field: evaluation reads every task in order, so
the selector would otherwise be ignored without a word. On the training taskset it
stays accepted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reinforge.buffer.taskset_config import TasksetConfig
from reinforge.config import ConfigError, config_from_dict


def _config(tmp_path: Path, taskset: dict[str, Any], evals: list[dict[str, Any]]) -> Any:
    rows = tmp_path / "tasks.jsonl"
    rows.write_text('{"q": "1+1?", "a": "2"}\n')
    source = {"path": str(rows), "format": {"prompt_key": "q", "response_key": "a"}}
    return config_from_dict(
        {
            "model": {"engine": "mock"},
            "buffer": {
                "explorer_input": {
                    "taskset": {**source, **taskset},
                    "eval_tasksets": [{**source, **e} for e in evals],
                }
            },
        },
        source="cfg.yaml",
    )


@pytest.mark.parametrize("key", ["data_selector", "task_selector"])
def test_a_selector_on_an_eval_taskset_is_refused_by_name(tmp_path: Path, key: str) -> None:
    selector = {key: {"selector_type": "shuffle"}}
    with pytest.raises(ConfigError) as err:
        _config(tmp_path, {}, [{"name": "plain"}, {"name": "held_out", **selector}])
    message = str(err.value)
    assert "cfg.yaml: buffer.explorer_input: " in message
    assert "eval_tasksets[1] ('held_out').data_selector: " in message
    assert "eval taskset takes no data_selector" in message


def test_the_training_taskset_keeps_its_selector(tmp_path: Path) -> None:
    cfg = _config(tmp_path, {"data_selector": {"selector_type": "shuffle"}}, [{"name": "e"}])
    assert cfg.buffer.explorer_input.taskset.data_selector.selector_type == "shuffle"
    assert cfg.buffer.explorer_input.eval_tasksets[0].data_selector is None


def test_a_taskset_marked_is_eval_refuses_a_selector_too(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="data_selector: an eval taskset takes no"):
        TasksetConfig.model_validate(
            {"path": "x.jsonl", "is_eval": True, "data_selector": {"selector_type": "random"}}
        )
