"""A run's GPU plan from its config: ``reinforge config`` shows it, the vLLM servers the
run starts see only their GPUs, and too few GPUs is said before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.config import ConfigError, load_config
from reinforge.launcher.gpu_plan import placed_servers, run_plan

CONFIG = """
project: plan
model:
  engine: vllm
  vllm: {replicas: 2}
buffer:
  batch_size: 4
  explorer_input:
    taskset: {path: tasks.jsonl, default_workflow: simple_workflow}
trainer:
  parallel: {world_size: 2}
"""


@pytest.fixture
def cfg_file(tmp_path: Path) -> Path:
    path = tmp_path / "cfg.yaml"
    path.write_text(CONFIG)
    return path


def test_reinforge_config_prints_the_plan(cfg_file: Path) -> None:
    result = CliRunner().invoke(app, ["config", "-c", str(cfg_file), "--gpus", "4"])
    assert result.exit_code == 0, result.output
    assert result.output.endswith(
        "# GPU placement on 4 visible GPU(s):\n"
        "#   4 GPU(s) visible\n"
        "#   engine replica 0: GPU 0\n"
        "#   engine replica 1: GPU 1\n"
        "#   trainer local rank 0: GPU 2\n"
        "#   trainer local rank 1: GPU 3\n"
    )
    assert yaml.safe_load(result.output)["trainer"]["parallel"]["world_size"] == 2
    result = CliRunner().invoke(app, ["config", "-c", str(cfg_file), "--gpus", "3"])
    assert "#   cannot place the run: " in result.output and "share_gpus: true" in result.output


def test_each_vllm_replica_sees_only_its_gpus(cfg_file: Path, tmp_path: Path) -> None:
    plan = run_plan(load_config(cfg_file), gpus=4)
    make = placed_servers(plan)
    args = {"python": "python", "served_name": "policy", "max_model_len": 64}
    servers = [
        make(model_dir=tmp_path, log_path=tmp_path / f"{i}.log", env={"X": "1"}, **args)
        for i in range(2)
    ]
    seen = [s.environment()["CUDA_VISIBLE_DEVICES"] for s in servers]
    assert seen == ["0", "1"] and servers[0].environment()["X"] == "1"
    assert not {0, 1} & set(plan.ranks)
    # a CUDA_VISIBLE_DEVICES the config sets for the servers wins (it was asked for)
    own = placed_servers(plan)(
        model_dir=tmp_path, log_path=tmp_path / "o.log", env={"CUDA_VISIBLE_DEVICES": "7"}, **args
    )
    assert own.environment()["CUDA_VISIBLE_DEVICES"] == "7"


def test_too_few_gpus_and_the_other_shapes(cfg_file: Path) -> None:
    cfg = load_config(cfg_file)
    with pytest.raises(ConfigError, match=r"placing the run on GPUs: .*share_gpus"):
        run_plan(cfg, gpus=3)
    shared = load_config(cfg_file, overrides=["trainer.parallel.share_gpus=true"])
    assert run_plan(shared, gpus=3).ranks == (2, 0)
    explore = load_config(cfg_file, overrides=["mode=explore"])
    assert run_plan(explore, gpus=2).ranks == ()  # nothing trains here
    launched = load_config(cfg_file, overrides=["trainer.parallel.listen=0.0.0.0:29500"])
    assert run_plan(launched, gpus=2).ranks == ()  # the launcher places its ranks
    ray = load_config(cfg_file, overrides=["cluster.backend=ray"])
    assert run_plan(ray, gpus=8) is None  # Ray reserves a GPU per actor
