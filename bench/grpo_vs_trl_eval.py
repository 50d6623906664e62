"""bench/grpo_vs_trl.py's shared evaluator: one worker that scores every side's saved
policy with the same engine and tasks (split out of the script: house rules)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from grpo_vs_trl_reinforge import _log, reinforge_config  # noqa: E402
from grpo_vs_trl_settings import GREEDY_EVAL, GRPO_CONFIG, SAMPLED_EVAL, Settings  # noqa: E402

# ---- worker: shared evaluator ---------------------------------------------------------


def _load_weights(model_dir: Path) -> dict[str, Any]:
    """The tensors of a HF model directory saved with safetensors (one file or shards)."""
    from safetensors.torch import load_file

    weights: dict[str, Any] = {}
    for file in sorted(model_dir.glob("*.safetensors")):
        weights.update(load_file(file))
    if not weights:
        raise FileNotFoundError(f"no *.safetensors in {model_dir}")
    return weights


def worker_eval(spec: dict[str, Any]) -> dict[str, Any]:
    """One engine, one evaluator: held-out mean@k (and greedy accuracy with ``--greedy``)
    of each model in turn."""
    import asyncio

    import torch

    torch.set_num_threads(spec["settings"]["threads"])
    from reinforge.config import config_from_dict
    from reinforge.launcher.session import RunSession

    settings = Settings(**spec["settings"])
    work = Path(spec["work_dir"])
    cfg = reinforge_config(settings, work / "run", spec["model_dir"])
    data = cfg.model_dump(mode="json", by_alias=False)
    from reinforge.config import load_config

    test = (
        load_config(GRPO_CONFIG)
        .buffer.explorer_input.eval_tasksets[0]
        .model_dump(mode="json", by_alias=False)
    )
    test.update(limit=settings.eval_limit, repeat_times=settings.eval_k, name=SAMPLED_EVAL)
    test["rollout_args"]["temperature"] = settings.temperature
    greedy = json.loads(json.dumps(test))
    greedy.update(name=GREEDY_EVAL, repeat_times=1)
    greedy["rollout_args"]["temperature"] = 0.0
    data["buffer"]["explorer_input"]["eval_tasksets"] = (
        [test, greedy] if settings.greedy else [test]
    )
    data["mode"] = "eval"
    cfg = config_from_dict(data, "<bench eval>", config_dir=str(GRPO_CONFIG.parent))
    session = RunSession.open(cfg, with_pipeline=False)
    results: dict[str, Any] = {}

    async def run_all() -> None:
        for step, (name, folder) in enumerate(spec["models"].items()):
            if folder is not None:
                session.explorer.engine.update_weights(_load_weights(Path(folder)), version=step)
            start = time.monotonic()
            metrics = await session.explorer.evaluate(step)
            results[name] = {
                "sampled": metrics[f"eval/{SAMPLED_EVAL}/mean@{settings.eval_k}"],
                "greedy": metrics.get(f"eval/{GREEDY_EVAL}/mean@1"),
                "questions": int(metrics[f"eval/{SAMPLED_EVAL}/tasks"]),
                "seconds": time.monotonic() - start,
            }
            _log("eval", f"{name}: {results[name]}")

    try:
        asyncio.run(run_all())
    finally:
        session.close()
    return {"models": results}
