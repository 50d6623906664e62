"""``examples/vllm/grpo.yaml`` and ``examples/ray/grpo.yaml`` run with ``reinforge run``
on real vLLM (and a real local Ray), 2 small steps each.

Each example itself is run, shrunk through the config: two steps of two questions,
no evaluation, no std filter (so both steps train). What must hold: the trainer's
first forward reproduces the logprobs vLLM sampled with (ratio 1), the second
step's rollouts come from the weights the first step trained, and nothing of vLLM
is left running afterwards.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reinforge.buffer import SQLiteExperienceStorage
from reinforge.cli.main import app

pytestmark = [pytest.mark.slow, pytest.mark.vllm]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# starts vLLM (and Ray) and trains the 135M model twice: ~2-3 min alone, and past the
# default 300 s when another test suite or a benchmark shares the 2 cores
@pytest.mark.timeout(900)
@pytest.mark.parametrize("example", ["vllm", "ray"])
def test_example_trains_two_steps(
    example: str, vllm_python: str, tmp_path: Path, vllm_processes_under
) -> None:
    path = EXAMPLES / example / "grpo.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["model"]["vllm"].update(python=vllm_python, kv_cache_gb=1, work_dir=str(tmp_path / "vllm"))
    buffer = cfg["buffer"]
    buffer.update(total_steps=2, batch_size=2)
    taskset = buffer["explorer_input"]["taskset"]
    taskset.update(path=str(path.parent / taskset["path"]), repeat_times=4)
    buffer["explorer_input"]["eval_tasksets"] = []
    buffer["experience_pipeline"]["operators"] = [{"name": "invalid_reward_filter"}]
    cfg["explorer"]["eval_interval"] = None
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    run_dir = tmp_path / "run"

    result = CliRunner().invoke(
        app, ["run", "-c", str(tmp_path / "cfg.yaml"), "--run-dir", str(run_dir)]
    )
    assert result.exit_code == 0, result.output

    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    trained = [r for r in rows if "train/sampler/ratio_mean" in r]
    assert [r["step"] for r in trained] == [1, 2]
    assert trained[0]["train/sampler/ratio_mean"] == pytest.approx(1.0, abs=1e-3)
    storage = SQLiteExperienceStorage(run_dir / "buffer.db")
    try:
        versions = {e.eid.batch: e.info["model_version"] for e in storage.iter_experiences()}
    finally:
        storage.close()
    assert versions == {1: 0, 2: 1}
    assert vllm_processes_under(tmp_path / "vllm") == []
