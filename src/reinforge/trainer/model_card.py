"""A model card (README.md) for an exported checkpoint: where it came from and how it scores.

Written from the run directory itself: ``config.json`` (base model, algorithm,
trainer settings, tasksets) and ``metrics.jsonl`` (eval results per taskset, first
and last), so the card states what the run measured and nothing it did not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from reinforge.core import explore_metric_names as explore


def _eval_rows(metrics_path: Path) -> dict[str, list[tuple[int, str, float]]]:
    """Per eval taskset: (step, metric name, value) of its headline score, in order."""
    out: dict[str, list[tuple[int, str, float]]] = {}
    if not metrics_path.is_file():
        return out
    for line in metrics_path.read_text(encoding="utf-8").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        step = row.get("step")
        for key, value in row.items():
            parts = key.split("/")
            if (
                len(parts) != 3
                or parts[0] + "/" != explore.EVAL_PREFIX
                or not isinstance(value, int | float)
            ):
                continue
            name, metric = parts[1], parts[2]
            mean_at = explore.eval_metric(name, explore.MEAN_AT)
            if metric.startswith(explore.MEAN_AT) or (
                metric == explore.ACCURACY and not any(k.startswith(mean_at) for k in row)
            ):
                out.setdefault(name, []).append((int(step or 0), metric, float(value)))
    return out


def model_card(
    run_dir: Path, checkpoint: Path, base_model: str, *, adapter_only: bool = False
) -> str:
    """The card's Markdown text."""
    config: dict[str, Any] = {}
    if (run_dir / "config.json").is_file():
        config = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    trainer = config.get("trainer", {})
    lora = trainer.get("lora", {})
    inputs = config.get("buffer", {}).get("explorer_input", {})
    train_set = inputs.get("taskset") or {}
    state_file = checkpoint / "state.json"
    state = json.loads(state_file.read_text(encoding="utf-8")) if state_file.is_file() else {}
    steps = state.get("global_step", checkpoint.name.removeprefix("step_"))
    kind = (
        "LoRA adapter"
        if adapter_only
        else ("full model (LoRA merged)" if lora.get("enabled") else "full model")
    )
    lines = [
        f"# {config.get('project', 'reinforge')}/{config.get('name', run_dir.name)}",
        "",
        f"A {kind} fine-tuned with reinforcement learning by reinforge.",
        "",
        "| | |",
        "| --- | --- |",
        f"| base model | `{base_model}` |",
        f"| algorithm | {trainer.get('algorithm', 'unknown')} |",
        f"| training steps | {steps} |",
        f"| learning rate | {trainer.get('lr', 'unknown')} |",
        f"| fine-tuning | {'LoRA r=' + str(lora.get('r')) if lora.get('enabled') else 'full'} |",
        f"| training taskset | {train_set.get('name', 'unknown')} (`{train_set.get('path')}`) |",
        f"| workflow | {train_set.get('default_workflow_type')} |",
        f"| checkpoint | `{checkpoint}` |",
        "",
    ]
    evals = _eval_rows(run_dir / "metrics.jsonl")
    if evals:
        lines += [
            "## Evaluation",
            "",
            "| taskset | metric | first (step) | best | last (step) |",
            "| --- | --- | --- | --- | --- |",
        ]
        for name, rows in evals.items():
            first, last = rows[0], rows[-1]
            best = max(r[2] for r in rows)
            lines.append(
                f"| {name} | {first[1]} | {first[2]:.3f} ({first[0]}) | {best:.3f} | "
                f"{last[2]:.3f} ({last[0]}) |"
            )
        lines.append("")
    else:
        lines += ["No evaluation was recorded for this run.", ""]
    if adapter_only:
        lines += [
            "Load it on top of the base model with peft:",
            "",
            "```python",
            "from peft import PeftModel",
            "from transformers import AutoModelForCausalLM",
            f"model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained('{base_model}'), '.')",
            "```",
            "",
        ]
    return "\n".join(lines)


def write_model_card(
    out_dir: Path, run_dir: Path, checkpoint: Path, base_model: str, *, adapter_only: bool = False
) -> Path:
    path = Path(out_dir) / "README.md"
    path.write_text(model_card(run_dir, checkpoint, base_model, adapter_only=adapter_only))
    return path
