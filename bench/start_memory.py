"""Peak host memory while 2 FSDP2 trainer ranks start: the old start (every rank builds
the whole fp32 model, then shards it) against the sharded start (``meta``, shard, each
rank reads its rows), side by side in one run; and the memory plan's figures beside
the measured ones.

    OMP_NUM_THREADS=1 .venv/bin/python bench/start_memory.py
    .venv/bin/python bench/start_memory.py --model smollm2-135m-instruct --world 1 2

By default the model is a random Qwen2.5-0.5B-shaped Llama (494M parameters, 1.98 GB
in fp32) saved to a temporary folder. Each rank measures its resident memory just
before its trainer starts and its peak (``VmHWM``, reset through
``/proc/self/clear_refs``) once it has started, through a first small step (AdamW's
moments are made at its end) and through a second one (the steady state the memory
plan's figure is for); it reports ``Trainer.state_bytes`` after the steps. The target (issue 43): the ranks'
growth at start, summed, at most 1.2x one copy of the model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

GIB = 2**30
#: Qwen2.5-0.5B's decoder (its config.json), as a Llama
SHAPE = {
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
}


def _status(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


#: the step's rows and their length (prompt + response), set by --rows/--row-tokens
ROWS = {"rows": 4, "length": 12}


def settings() -> dict[str, Any]:
    """GRPO without KL, two micro-batches of the step's rows (the second one's
    activations beside the first one's gradients, as in most steps), no prompt sharing
    (the plan's activations count every row's tokens)."""
    return {
        "algorithm_args": {"kl_loss": "none"},
        "micro_batch_size": max(ROWS["rows"] // 2, 1),
        "share_prompts": False,
    }


def experiences() -> list[Any]:
    from reinforge.core import Experience
    from reinforge.core.eid import EID

    out = []
    generator = torch.Generator().manual_seed(0)
    length = ROWS["length"]
    for i in range(ROWS["rows"]):
        exp = Experience(
            tokens=torch.randint(10, 40000, (length,), generator=generator),
            prompt_length=length // 2,
            logprobs=-torch.rand(length - length // 2, generator=generator),
            reward=float(i % 2),
        )
        exp.eid = EID(batch=1, task=i // 2, run=i % 2)
        out.append(exp)
    return out


def rank(
    index: int, world: int, model: str, folder: str, sharded: bool, rows: dict[str, int]
) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM

    from reinforge.trainer.sharding.strategy import FSDP2, RankContext
    from reinforge.trainer.trainer import Trainer
    from reinforge.trainer.trainer_config import TrainerConfig

    torch.set_num_threads(1)
    ROWS.update(rows)
    if world > 1:
        dist.init_process_group(
            "gloo",
            init_method=f"file://{folder}/rdv-{sharded}-{world}",
            rank=index,
            world_size=world,
        )
    FSDP2.starts_sharded = sharded
    data = settings()
    if world > 1:
        data["parallel"] = {"world_size": world, "strategy": "fsdp2"}
    cfg = TrainerConfig.model_validate(data)
    import accelerate  # noqa: F401  (what every start imports, before the baseline)
    from torch.distributed import fsdp  # noqa: F401

    import reinforge.trainer.sharded_start  # noqa: F401

    with torch.device("meta"):
        AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(model))
    if world > 1:
        dist.barrier()
    Path("/proc/self/clear_refs").write_text("5")
    before = _status("VmRSS")
    ctx = RankContext(index, world, "fsdp2" if world > 1 else "single")
    trainer = Trainer(model, cfg, pad_token_id=0, device="cpu", rank=ctx)
    started = _status("VmHWM")
    peaks = []
    for _ in range(2):  # the first step makes AdamW's moments; the second runs beside them
        Path("/proc/self/clear_refs").write_text("5")  # this step's own peak from here
        trainer.train_step(experiences())
        peaks.append(_status("VmHWM"))
    report = {
        "before": before,
        "grown": started - before,
        "first_step_peak": peaks[0],
        "step_peak": peaks[1],
        "state": trainer.state_bytes(),
    }
    Path(folder, f"{sharded}-{world}-{index}.json").write_text(json.dumps(report))
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def measure(model: str, world: int, sharded: bool, folder: str) -> list[dict[str, Any]]:
    mp.spawn(rank, args=(world, model, folder, sharded, ROWS), nprocs=world)
    return [
        json.loads(Path(folder, f"{sharded}-{world}-{i}.json").read_text()) for i in range(world)
    ]


def random_model(folder: Path) -> Path:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    LlamaForCausalLM(LlamaConfig(**SHAPE)).save_pretrained(folder)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a catalog name or model folder (default: random 0.5B)")
    parser.add_argument("--world", type=int, nargs="+", default=[2])
    parser.add_argument("--rows", type=int, default=4, help="rows of the measured step")
    parser.add_argument("--row-tokens", type=int, default=12, help="tokens of each row")
    args = parser.parse_args()
    ROWS.update(rows=args.rows, length=args.row_tokens)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from reinforge.models.catalog import resolve_model_path
    from reinforge.trainer.memory_plan import ModelShape, RunShape, plan_memory
    from reinforge.trainer.trainer_config import TrainerConfig

    with tempfile.TemporaryDirectory(prefix="start_memory_") as tmp:
        if args.model:
            model = str(resolve_model_path(args.model))
        else:
            model = str(random_model(Path(tmp) / "model"))
        shape = ModelShape.from_path(model)
        copy = shape.parameters * 4
        print(f"model {args.model or 'random qwen2.5-0.5b shape'}: {copy / GIB:.2f} GiB in fp32")
        for world in args.world:
            data = settings()
            if world > 1:
                data["parallel"] = {"world_size": world, "strategy": "fsdp2"}
            run = RunShape(
                row_tokens=args.row_tokens,
                runtime_bytes=0,
                engine_dtype=None,
                cpu=True,
            )
            plan = plan_memory(shape, TrainerConfig.model_validate(data), run)
            starts = (False, True) if world > 1 else (False,)
            for sharded in starts:
                reports = measure(model, world, sharded, tmp)
                grown = sum(r["grown"] for r in reports)
                name = "sharded" if sharded else "old"
                print(
                    f"{world} rank(s), {name} start: grown {grown / GIB:.2f} GiB in all "
                    f"({grown / copy:.2f}x the model); per rank "
                    + ", ".join(f"{r['grown'] / GIB:.2f}" for r in reports)
                    + f" GiB (plan {(plan.start_bytes) / GIB:.2f})"
                )
                for i, r in enumerate(reports):
                    first = r["first_step_peak"] - r["before"]
                    step = r["step_peak"] - r["before"]
                    print(
                        f"  rank {i}: state {r['state'] / GIB:.3f} GiB (plan "
                        f"{plan.state_bytes / GIB:.3f}, {r['state'] / plan.state_bytes:.2f}x); "
                        f"peak over the baseline through the second step {step / GIB:.2f} GiB "
                        f"(plan {plan.rank_total / GIB:.2f}, {step / plan.rank_total:.2f}x), "
                        f"through the first {first / GIB:.2f} GiB; "
                        f"baseline {r['before'] / GIB:.2f} GiB"
                    )


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
