"""bench/grpo_vs_trl.py's report: per-seed comparison, the statistics over seeds and
their printed tables (split out of the script: house rules)."""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import cpu_kind  # noqa: E402  (bench/cpu_kind.py, beside this script)
import seed_stats  # noqa: E402  (bench/seed_stats.py, beside this script)
from grpo_vs_trl_settings import SIDES, Settings  # noqa: E402


@dataclass
class WorkerRun:
    """One worker subprocess: its result JSON plus what the parent measured."""

    result: dict[str, Any]
    process_wall_s: float
    peak_rss_mib: float
    cpu_s: float
    load: list[float]  # 1-minute load average, sampled every few seconds while it ran


def per_step_s(step_ends: list[float]) -> float:
    """Mean seconds per step after the first (the first one carries warm-up costs)."""
    if len(step_ends) < 2:
        return float("nan")
    return (step_ends[-1] - step_ends[0]) / (len(step_ends) - 1)


def _mean(values: list[float]) -> float:
    finite = [v for v in values if isinstance(v, int | float) and math.isfinite(v)]
    return sum(finite) / len(finite) if finite else float("nan")


def build_report(
    settings: Settings, sides: dict[str, WorkerRun], evaluation: dict[str, Any] | None
) -> dict[str, Any]:
    """Numbers for the table and results.json (one dict per side, ratios, eval)."""
    report: dict[str, Any] = {"settings": asdict(settings), "sides": {}}
    for name, run in sides.items():
        r = run.result
        wall = r["train_wall_s"]
        report["sides"][name] = {
            "train_wall_s": wall,
            "process_wall_s": run.process_wall_s,
            "peak_rss_mib": run.peak_rss_mib,
            "main_peak_rss_mib": r.get("main_peak_rss_mib"),
            "cpu_s": run.cpu_s,
            "load_mean": _mean(run.load),
            "load_max": max(run.load),
            "rollouts": r["rollouts"],
            "rollouts_per_min": 60.0 * r["rollouts"] / wall,
            "backward_samples": r["backward_samples"],
            "backward_per_min": 60.0 * r["backward_samples"] / wall,
            "s_per_step": per_step_s(r["step_ends_s"]),
            "rollout_s_per_step": _mean(r.get("rollout_s_per_step", [])[1:]),
            "steady_rollouts_per_min": 60.0
            * settings.rollouts_per_step
            / per_step_s(r["step_ends_s"]),
            "rollouts_per_cpu_min": 60.0 * r["rollouts"] / run.cpu_s,
            "train_reward_mean": _mean(r["train_reward_per_step"]),
            "response_length_mean": _mean(r["response_length_per_step"]),
            "threads": r.get("threads"),
        }
        report["sides"][name]["update_s_per_step"] = (
            report["sides"][name]["s_per_step"] - report["sides"][name]["rollout_s_per_step"]
        )
        if "trl_version" in r:
            report["trl_version"] = r["trl_version"]
    _add_ratios(report)
    if evaluation is not None:
        report["eval"] = evaluation["models"]
    return report


def _add_ratios(report: dict[str, Any]) -> None:
    """reinforge/TRL ratios and the equal wall time W, where ``report`` has both sides."""
    a, b = report["sides"].get("reinforge"), report["sides"].get("trl")
    if a and b:
        report["ratio"] = {
            k: a[k] / b[k]
            for k in (
                "rollouts_per_min",
                "backward_per_min",
                "steady_rollouts_per_min",
                "rollouts_per_cpu_min",
            )
            if b[k] > 0
        }
        report["equal_wall_s"] = max(a["train_wall_s"], b["train_wall_s"])


def _sides_of(report: dict[str, Any]) -> set[str]:
    return set(report.get("sides") or report.get("curve") or {})


def join_sides(seeds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Seed reports with the one-sided reports of a seed joined into one paired report.

    Why: a whole seed (both sides and the evaluation) takes 15-25 minutes on 2 cores,
    longer than a shared machine's heavy-job slot; ``--only reinforge`` and ``--only
    trl`` run the same seed in two shorter invocations (the TRL side is deterministic
    for a seed), and ``--report`` joins their results.json files here: both sides, both
    final evaluations (the untrained model's from the first run), the curves and the
    ratios. Reports that already hold both sides pass unchanged. A side given twice
    for one seed, or one seed's sides measured on different CPU kinds, raise ValueError.
    """
    joined: dict[int, dict[str, Any]] = {}
    for report in seeds:
        seed = report["seed"]
        if seed not in joined:
            joined[seed] = report
            continue
        first = joined[seed]
        twice = _sides_of(first) & _sides_of(report)
        if twice:
            raise ValueError(
                f"seed {seed}: side(s) {', '.join(sorted(twice))} given in more than one run"
            )
        kinds = {r.get("cpu", {}).get("kind") for r in (first, report)}
        if len(kinds) > 1:
            raise ValueError(
                f"seed {seed}: the sides ran on different CPU kinds ({', '.join(map(str, kinds))})"
            )
        both = {**first, "sides": {**first.get("sides", {}), **report.get("sides", {})}}
        both["eval"] = {**report.get("eval", {}), **first.get("eval", {})}
        both["curve"] = {**first.get("curve", {}), **report.get("curve", {})}
        both["lr_per_step"] = {**first.get("lr_per_step", {}), **report.get("lr_per_step", {})}
        if "trl_version" in report:
            both["trl_version"] = report["trl_version"]
        both["joined"] = True
        _add_ratios(both)
        joined[seed] = both
    return list(joined.values())


def format_report(report: dict[str, Any]) -> str:
    """The printed table (plain text, one row per measure)."""
    s = report["settings"]
    sides = report["sides"]
    names = [n for n in SIDES if n in sides]
    trl = f"TRL {report.get('trl_version', '?')}"
    header = {"reinforge": "reinforge", "trl": trl}
    lines = [
        "",
        "GRPO on CPU: reinforge vs TRL GRPOTrainer",
        f"  task: examples/arithmetic (train.jsonl, held-out test.jsonl), model {s['model']}",
        f"  {s['steps']} steps x {s['prompts']} prompts x {s['group']} rollouts, max "
        f"{s['max_tokens']} new tokens, temperature {s['temperature']}, lr {s['lr']} "
        f"(warm-up {s['warmup_steps']}), micro-batch {s['micro_batch']}, KL coef {s['kl_coef']}, "
        f"reward_std_filter {'on' if s['std_filter'] else 'off'} (reinforge), "
        f"{s['threads']} torch threads per side, precision {s['precision']}",
    ]
    if "cpu" in report:
        lines.append("  " + cpu_kind.describe(report["cpu"]))
    lines.append("")

    def row(label: str, key: str, fmt: str, ratio: str | None = None) -> None:
        cells = [
            format(sides[n][key], fmt) if sides[n].get(key) is not None else "-" for n in names
        ]
        extra = ""
        value = report.get("ratio", {}).get(ratio) if ratio is not None else None
        if value is not None and math.isfinite(value):
            extra = f"{value:.2f}x"
        lines.append(f"  {label:<44}" + "".join(f"{c:>16}" for c in cells) + f"{extra:>16}")

    lines.append(
        f"  {'':<44}" + "".join(f"{header[n]:>16}" for n in names) + f"{'reinforge/TRL':>16}"
    )
    row("rollouts (steps x prompts x group)", "rollouts", "d")
    row("training wall (s)", "train_wall_s", ".1f")
    row("rollouts / min  [headline]", "rollouts_per_min", ".1f", "rollouts_per_min")
    row("completions through backward", "backward_samples", ".0f")
    row("completions through backward / min", "backward_per_min", ".1f", "backward_per_min")
    row("s / step (after step 1)", "s_per_step", ".1f")
    row("  of which rollout phase (sample, score) *", "rollout_s_per_step", ".1f")
    row("  of which update phase (rest of the step)", "update_s_per_step", ".1f")
    row("rollouts / min after step 1", "steady_rollouts_per_min", ".1f", "steady_rollouts_per_min")
    row("rollouts / CPU-min (whole process)", "rollouts_per_cpu_min", ".1f", "rollouts_per_cpu_min")
    row("process wall incl. imports, save (s)", "process_wall_s", ".1f")
    row("peak RSS, training process (MiB)", "main_peak_rss_mib", ".0f")
    row("peak RSS, largest process of the tree (MiB)", "peak_rss_mib", ".0f")
    row("process CPU time, user+sys (s)", "cpu_s", ".0f")
    row("1-min load average while running: mean", "load_mean", ".1f")
    row("1-min load average while running: max", "load_max", ".1f")
    row("train reward, mean over steps", "train_reward_mean", ".3f")
    row("mean completion length (tokens)", "response_length_mean", ".1f")
    ev = report.get("eval")
    if ev:
        base = ev.get("untrained", {})
        k = s["eval_k"]
        n_q = next(iter(ev.values()))["questions"]
        lines.append("")
        lines.append(
            f"  held-out accuracy, one shared evaluator (reinforge HF engine + simple_workflow + "
            f"accuracy_reward, {n_q} test questions)"
        )
        if "equal_wall_s" in report:
            lines.append(
                f"  models as of wall time <= W = {report['equal_wall_s']:.1f} s (the slower "
                "side's training wall): each side's final model after the same steps"
            )
        cols = ["untrained", *names]
        lines.append(
            f"  {'':<44}" + "".join(f"{header.get(c, c):>16}" for c in cols) + f"{'Δ r-TRL':>16}"
        )
        for key, label in (
            ("sampled", f"mean@{k}, temperature {s['temperature']}"),
            ("greedy", "greedy (temperature 0)"),
        ):
            cells = [ev[c][key] if c in ev else None for c in cols]
            if all(v is None for v in cells):
                continue  # greedy accuracy was not evaluated (--greedy)
            text = "".join(f"{'-' if v is None else format(v, '.3f'):>16}" for v in cells)
            delta = ""
            if "reinforge" in ev and "trl" in ev and ev["trl"][key] is not None:
                delta = f"{ev['reinforge'][key] - ev['trl'][key]:+.3f}"
            lines.append(f"  {label:<44}{text}{delta:>16}")
        if base:
            times = ", ".join(f"{c} {ev[c]['seconds']:.0f} s" for c in cols if c in ev)
            lines.append(f"  eval time per model: {times}")
    lines.append("")
    lines.append(
        "  rollouts: every sampled completion handed to a step's update (same count both sides);"
    )
    lines.append(
        "  through backward: after reinforge's reward_std_filter (all-equal-reward groups dropped);"
    )
    lines.append(
        "  TRL back-propagates every completion. Training wall: from before loading the models to"
    )
    lines.append("  the end of the last optimiser step (imports and the final save excluded).")
    lines.append(
        "  * TRL's rollout phase (_generate_and_score_completions) also computes the reference"
    )
    lines.append("  model's log-probs; reinforge computes them in its update phase.")
    return "\n".join(lines)


def build_seed_report(
    settings: Settings, sides: dict[str, WorkerRun], evaluation: dict[str, Any] | None
) -> dict[str, Any]:
    """``build_report`` of one seed plus each side's accuracy curve: (step, wall s, mean@k)."""
    models = evaluation["models"] if evaluation else {}
    final = {
        name: models[f"{name}@{settings.steps}"]
        for name in SIDES
        if f"{name}@{settings.steps}" in models
    }
    if "untrained" in models:
        final["untrained"] = models["untrained"]
    report = build_report(settings, sides, {"models": final} if final else None)
    report["cpu"] = cpu_kind.capability()
    report["seed"] = settings.seed
    report["curve"] = {
        name: [
            [
                int(step),
                run.result["step_ends_s"][int(step) - 1],
                models[f"{name}@{step}"]["sampled"],
            ]
            for step in run.result["models"]
            if f"{name}@{step}" in models
        ]
        for name, run in sides.items()
    }
    report["lr_per_step"] = {name: run.result.get("lr_per_step") for name, run in sides.items()}
    return report


def summarize(settings: Settings, seeds: list[dict[str, Any]], untrained: float | None) -> dict:
    """Over seeds: each side's final mean@k and the paired difference with 95% intervals,
    time to ``settings.level`` per side, and the rollouts/min ratio."""
    evaluated = [r for r in seeds if "eval" in r and all(n in r["eval"] for n in SIDES)]
    finals = {n: [r["eval"][n]["sampled"] for r in evaluated] for n in SIDES}
    diffs = [a - b for a, b in zip(finals["reinforge"], finals["trl"], strict=True)]
    if not evaluated:  # one side only (--only): its final accuracy over seeds
        finals = {
            n: [r["eval"][n]["sampled"] for r in seeds if n in r.get("eval", {})] for n in SIDES
        }
    start = [] if untrained is None else [(0.0, untrained)]
    times = {
        n: [
            seed_stats.time_to_level(
                start + [(w, acc) for _, w, acc in r["curve"][n]], settings.level
            )
            for r in evaluated
        ]
        for n in SIDES
    }
    medians = {n: seed_stats.median(t) for n, t in times.items()}
    speed = [r["ratio"]["rollouts_per_min"] for r in seeds if "ratio" in r]
    return {
        "seeds": [r["seed"] for r in evaluated],
        "final": {n: asdict(seed_stats.interval(v)) for n, v in finals.items()},
        "difference": asdict(seed_stats.interval(diffs)),
        "differences": diffs,
        "seeds_for_width_0.06": seed_stats.seeds_for_width(diffs, 0.06),
        "level": settings.level,
        "time_to_level_s": times,
        "time_to_level_median_s": medians,
        "time_to_level_ratio": medians["trl"] / medians["reinforge"]
        if math.isfinite(medians["reinforge"]) and medians["reinforge"] > 0
        else math.nan,
        "rollouts_per_min_ratio": asdict(seed_stats.interval(speed)),
        "rollouts_per_min_ratios": speed,
    }


def _minutes(seconds: float) -> str:
    return "not reached" if not math.isfinite(seconds) else f"{seconds / 60:.2f}"


def format_summary(settings: Settings, seeds: list[dict[str, Any]], summary: dict) -> str:
    """The headline table: per seed, then means with intervals over seeds."""
    k, level = settings.eval_k, summary["level"]
    lines = [
        "",
        f"Over {len(summary['seeds'])} seed(s), paired (same prompt order per seed); held-out "
        f"mean@{k} after {settings.steps} steps; minutes = training wall (eval and model saves "
        f"excluded) until held-out mean@{k} first reached {level} (evaluated after steps "
        f"{', '.join(map(str, settings.eval_steps))})",
        f"  {'seed':>5}{'reinforge':>11}{'TRL':>8}{'Δ':>8}{'min r':>13}{'min TRL':>13}"
        f"{'rollouts/min r/TRL':>20}",
    ]
    for r in seeds:
        if "eval" not in r or not all(n in r["eval"] for n in SIDES):
            continue
        acc = {n: r["eval"][n]["sampled"] for n in SIDES}
        ttl = {
            n: seed_stats.time_to_level([(w, a) for _, w, a in r["curve"][n]], level) for n in SIDES
        }
        lines.append(
            f"  {r['seed']:>5}{acc['reinforge']:>11.3f}{acc['trl']:>8.3f}"
            f"{acc['reinforge'] - acc['trl']:>+8.3f}{_minutes(ttl['reinforge']):>13}"
            f"{_minutes(ttl['trl']):>13}{r['ratio']['rollouts_per_min']:>19.2f}x"
        )
    final, diff = summary["final"], summary["difference"]
    lines.append("")
    for n in SIDES:
        lines.append(f"  {n:<10} mean@{k}: {seed_stats.Interval(**final[n]).format()}")
    width = diff["high"] - diff["low"]
    need = summary["seeds_for_width_0.06"]
    lines.append(
        f"  difference reinforge - TRL: {seed_stats.Interval(**diff).format(signed=True)}"
        + (f", interval width {width:.3f}" if math.isfinite(width) else "")
        + (f"; at this spread a width < 0.06 takes {need} seeds" if need else "")
    )
    med = summary["time_to_level_median_s"]
    reached = {n: sum(math.isfinite(t) for t in summary["time_to_level_s"][n]) for n in SIDES}
    n_seeds = len(summary["seeds"])
    lines.append(
        f"  minutes to mean@{k} >= {level} (median): reinforge {_minutes(med['reinforge'])} "
        f"({reached['reinforge']}/{n_seeds} seeds reached it), TRL {_minutes(med['trl'])} "
        f"({reached['trl']}/{n_seeds}); TRL/reinforge {summary['time_to_level_ratio']:.2f}x"
    )
    speed = summary["rollouts_per_min_ratio"]
    lines.append(
        f"  rollouts per wall minute, reinforge/TRL: {speed['mean']:.2f}x mean over seeds "
        f"({', '.join(f'{x:.2f}' for x in summary['rollouts_per_min_ratios'])})"
    )
    return "\n".join(lines)


def _untrained_accuracy(seeds: list[dict[str, Any]]) -> float | None:
    for r in seeds:
        if "untrained" in r.get("eval", {}):
            return r["eval"]["untrained"]["sampled"]
    return None
