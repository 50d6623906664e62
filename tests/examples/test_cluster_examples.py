"""The cluster launch files of ``examples/distributed/`` (written, not run here: no Slurm
or Kubernetes cluster): the sbatch script parses (``bash -n``), the manifest loads, and
the reinforge config each starts, with its overrides, validates and places its GPUs;
the ranks each starts add up to the driver's ``world_size``."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from reinforge.config import load_config
from reinforge.launcher.gpu_plan import run_plan

ROOT = Path(__file__).resolve().parents[2]
SBATCH = ROOT / "examples" / "distributed" / "slurm.sbatch"
MANIFEST = ROOT / "examples" / "distributed" / "pytorchjob.yaml"


def shell_value(text: str, name: str) -> str:
    found = re.search(rf"^{name}=\$?\{{?(?:{name}:-)?([^}}\s]+)", text, re.MULTILINE)
    assert found, name
    return found.group(1)


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_slurm_script_parses_and_its_config_validates() -> None:
    subprocess.run(["bash", "-n", str(SBATCH)], check=True)
    text = SBATCH.read_text()
    assert "#SBATCH --nodes=2" in text
    world = int(shell_value(text, "RANKS_NODE0")) + int(shell_value(text, "RANKS_NODE1"))
    values = {"$WORLD_SIZE": str(world), "$DRIVER_PORT": shell_value(text, "DRIVER_PORT")}
    overrides = []
    for item in re.findall(r"--set (\S+)", text):
        for name, value in values.items():
            item = item.replace(name, value)
        overrides.append(item.replace('"', ""))
    cfg = load_config(ROOT / shell_value(text, "CONFIG"), overrides=overrides)
    assert cfg.model.engine == "vllm" and cfg.trainer.parallel.world_size == 7
    assert cfg.trainer.parallel.listen == "0.0.0.0:29600"
    # the driver's step has one GPU: its vLLM replica takes it, the ranks are elsewhere
    plan = run_plan(cfg, gpus=1)
    assert plan is not None and plan.engines == ((0,),) and plan.ranks == ()


def test_the_pytorchjob_manifest_loads_and_its_config_validates() -> None:
    service, pod, job = yaml.safe_load_all(MANIFEST.read_text())
    assert [service["kind"], pod["kind"], job["kind"]] == ["Service", "Pod", "PyTorchJob"]
    driver = pod["spec"]["containers"][0]
    command, args = driver["command"], driver["args"]
    overrides = [args[i + 1] for i, a in enumerate(args) if a == "--set"]
    cfg = load_config(ROOT / command[command.index("-c") + 1], overrides=overrides)
    specs = job["spec"]["pytorchReplicaSpecs"]
    ranks = specs["Master"]["replicas"] + specs["Worker"]["replicas"]
    assert cfg.trainer.parallel.world_size == ranks
    rank = specs["Worker"]["template"]["spec"]["containers"][0]
    assert rank["command"][-1] == "reinforge.trainer.parallel.rank_worker"
    env = {e["name"]: e.get("value") for e in rank["env"]}
    port = cfg.trainer.parallel.listen.rsplit(":", 1)[1]
    assert env["REINFORGE_DRIVER"] == f"{service['metadata']['name']}:{port}"
    assert service["spec"]["ports"][0]["port"] == int(port)
    # the ranks write their checkpoint shards into the driver's run directory
    # themselves: the driver and every rank mount one claim over it
    run_dir = command[command.index("--run-dir") + 1]
    covering = [
        shared_mounts(pod["spec"], run_dir),
        shared_mounts(specs["Worker"]["template"]["spec"], run_dir),
    ]
    assert covering[0] and covering[0] == covering[1]


def shared_mounts(spec: dict, path: str) -> set[tuple[str, str]]:
    """(claim, mount path) of the volumes over ``path`` in a Pod spec's first container."""
    claims = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec.get("volumes", [])}
    mounts = spec["containers"][0].get("volumeMounts", [])
    return {
        (claims[m["name"]], m["mountPath"])
        for m in mounts
        if m["name"] in claims and path.startswith(m["mountPath"].rstrip("/") + "/")
    }
