"""The top-level ``seed``: every seed nobody set derives from it, and a mock run repeats exactly."""

import asyncio
import json

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.config import config_from_dict
from reinforge.explorer import Explorer


def _cfg(tmp_path, top_seed, run="run", **model):
    rows = tmp_path / "tasks.jsonl"
    if not rows.exists():
        rows.write_text(
            "".join(
                json.dumps({"q": f"What is {i} * 3?", "a": str(3 * i)}) + "\n" for i in range(24)
            )
        )
    data = {
        "seed": top_seed,
        "run_dir": str(tmp_path / run),
        "model": {"engine": "mock", "mock": {"policy": "arithmetic", "error_rate": 0.4, **model}},
        "buffer": {
            "batch_size": 8,
            "explorer_input": {
                "taskset": {
                    "path": str(rows),
                    "shuffle": True,
                    "format": {"prompt_key": "q", "response_key": "a"},
                    "repeat_times": 4,
                    "default_workflow_type": "math_boxed_workflow",
                },
                "eval_tasksets": [{"path": str(rows), "name": "e"}],
            },
        },
        "explorer": {"auxiliary_models": [{"name": "j", "engine": "mock"}]},
    }
    return config_from_dict(data)


def test_seed_reaches_every_unset_seed(tmp_path):
    cfg = _cfg(tmp_path, 7)
    assert cfg.model.hf.seed == cfg.model.mock.seed == cfg.trainer.seed == 7
    assert cfg.buffer.explorer_input.taskset.seed == 7
    assert cfg.buffer.explorer_input.eval_tasksets[0].seed == 7
    assert cfg.explorer.auxiliary_models[0].mock.seed == 8
    explicit = _cfg(tmp_path, 7, seed=3)
    assert explicit.model.mock.seed == 3 and explicit.trainer.seed == 7
    assert _cfg(tmp_path, None).model.mock.seed == 0  # no top-level seed: defaults stay


def test_seed_reaches_the_sft_rows_shuffle(tmp_path):
    """Seeds of a bench must train on different batch orders: the top-level seed
    reaches mode sft's dataset and ``trainer.sft_aux`` (both shuffle with their seed)."""
    rows = tmp_path / "demos.jsonl"
    rows.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    data = {
        "seed": 5,
        "mode": "sft",
        "model": {"engine": "mock"},
        "buffer": {"trainer_input": {"experience_buffer": {"path": str(rows)}}},
        "trainer": {"sft_aux": {"path": str(rows)}},
    }
    cfg = config_from_dict(data)
    assert cfg.buffer.trainer_input.experience_buffer.seed == 5 == cfg.trainer.sft_aux.seed
    data["buffer"]["trainer_input"]["experience_buffer"]["seed"] = 9
    assert config_from_dict(data).buffer.trainer_input.experience_buffer.seed == 9
    assert config_from_dict({**data, "seed": None}).trainer.sft_aux.seed == 42


def _explore(cfg):
    explorer = Explorer.from_config(cfg.model, cfg.buffer, cfg.explorer, cfg.storage_path)
    try:
        asyncio.run(explorer.explore())
    finally:
        explorer.close()
    storage = SQLiteExperienceStorage(cfg.storage_path)
    try:
        return [
            (e.eid.batch, e.eid.task, e.eid.run, e.tokens.tolist(), e.reward)
            for e in sorted(storage.read(), key=lambda e: (e.eid.batch, e.eid.task, e.eid.run))
        ]
    finally:
        storage.close()


def test_mock_run_with_a_seed_repeats_exactly_and_another_seed_differs(tmp_path):
    one = _explore(_cfg(tmp_path, 11, "a"))
    two = _explore(_cfg(tmp_path, 11, "b"))
    other = _explore(_cfg(tmp_path, 12, "c"))
    assert one == two
    assert one != other
