"""bench/grpo_vs_trl.py: flags, the settings it hands to reinforge, and the result table.

No training here: these check that the benchmark's reinforge side stays the
shipped GRPO demo config with only the bench's knobs changed, that impossible
batch shapes are refused before anything runs, and that the table prints what
the docstring promises.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from types import ModuleType

import pytest


def test_defaults_follow_the_grpo_demo_config(bench: ModuleType, tmp_path: Path) -> None:
    from reinforge.config import load_config

    demo = load_config(bench.GRPO_CONFIG)
    settings = bench.settings_from_args(bench.parse_args([]))
    cfg = bench.reinforge_config(settings, tmp_path / "run", "some/model/dir")
    taskset = cfg.buffer.explorer_input.taskset
    demo_taskset = demo.buffer.explorer_input.taskset
    assert cfg.buffer.batch_size == demo.buffer.batch_size == settings.prompts
    assert taskset.repeat_times == demo_taskset.repeat_times == settings.group
    assert taskset.rollout_args.temperature == demo_taskset.rollout_args.temperature
    assert taskset.format == demo_taskset.format
    assert cfg.model.max_response_tokens == demo.model.max_response_tokens
    assert cfg.trainer.lr == demo.trainer.lr
    assert cfg.trainer.warmup_steps == demo.trainer.warmup_steps
    assert cfg.trainer.micro_batch_size == demo.trainer.micro_batch_size
    assert cfg.trainer.algorithm == demo.trainer.algorithm == "grpo"
    assert cfg.trainer.algorithm_args.get("kl_loss") == demo.trainer.algorithm_args["kl_loss"]
    assert cfg.buffer.total_steps == settings.steps
    assert cfg.buffer.explorer_input.eval_tasksets == []  # no in-run eval in the timed loop
    assert cfg.model.model_path == "some/model/dir"
    ops = [op.name for op in cfg.buffer.experience_pipeline.operators]
    assert ops == [op.name for op in demo.buffer.experience_pipeline.operators]


def test_kl_coef_and_std_filter_flags(bench: ModuleType, tmp_path: Path) -> None:
    from reinforge.algorithms import resolve_algorithm

    settings = bench.settings_from_args(bench.parse_args([]))
    cfg = bench.reinforge_config(settings, tmp_path, "m")
    spec = resolve_algorithm(cfg.trainer.algorithm, cfg.trainer.algorithm_args)
    assert settings.kl_coef == 0.0 and not spec.use_reference  # the demo's: no KL term
    settings = bench.settings_from_args(bench.parse_args(["--kl-coef", "0.001", "--no-std-filter"]))
    cfg = bench.reinforge_config(settings, tmp_path, "m")
    spec = resolve_algorithm(cfg.trainer.algorithm, cfg.trainer.algorithm_args)
    assert spec.kl_loss == "low_var_kl" and spec.kl_loss_coef == 0.001 and spec.use_reference
    assert "reward_std_filter" not in [op.name for op in cfg.buffer.experience_pipeline.operators]


@pytest.mark.parametrize(
    "argv",
    [
        ["--prompts", "3", "--group", "5"],  # 15 rollouts: not whole micro-batches of 16
        ["--group", "1"],
        ["--steps", "0"],
        ["--order", "trl,trl"],
    ],
)
def test_impossible_settings_are_refused(bench: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        bench.parse_args(argv)


def test_report_table(bench: ModuleType) -> None:
    settings = bench.Settings(steps=2)

    def side(wall: float, backward: float) -> ModuleType:
        result = {
            "train_wall_s": wall,
            "step_ends_s": [wall / 2, wall],
            "rollouts": 128,
            "backward_samples": backward,
            "train_reward_per_step": [0.2, 0.3],
            "response_length_per_step": [20.0, 22.0],
            "main_peak_rss_mib": 3000.0,
            "threads": 2,
        }
        return bench.WorkerRun(result, wall + 10, 3100.0, 2 * wall, [1.0, 2.0])

    runs = {"reinforge": side(60.0, 96.0), "trl": side(180.0, 128.0)}
    runs["trl"].result["trl_version"] = "9.9"
    evaluation = {
        "models": {
            name: {"sampled": acc, "greedy": acc + 0.1, "questions": 100, "seconds": 30.0}
            for name, acc in (("untrained", 0.2), ("reinforge", 0.4), ("trl", 0.35))
        }
    }
    report = bench.build_report(settings, runs, evaluation)
    assert report["ratio"]["rollouts_per_min"] == pytest.approx(3.0)
    assert report["ratio"]["backward_per_min"] == pytest.approx(96 / 60 / (128 / 180))
    assert report["equal_wall_s"] == 180.0
    text = bench.format_report(report)
    assert "TRL 9.9" in text
    assert "3.00x" in text
    assert "W = 180.0 s" in text
    assert "+0.050" in text  # reinforge - TRL accuracy
    assert "mean@4" in text and "greedy" in text


def test_eval_steps_end_with_the_last_step(bench: ModuleType) -> None:
    assert bench.Settings(steps=8, eval_every=2).eval_steps == [2, 4, 6, 8]
    assert bench.Settings(steps=8, eval_every=3).eval_steps == [3, 6, 8]
    assert bench.Settings(steps=8, eval_every=20).eval_steps == [8]


def _seed_report(seed: int, r_curve: list, t_curve: list, speed: float) -> dict:
    return {
        "seed": seed,
        "eval": {"reinforge": {"sampled": r_curve[-1][2]}, "trl": {"sampled": t_curve[-1][2]}},
        "curve": {"reinforge": r_curve, "trl": t_curve},
        "ratio": {"rollouts_per_min": speed},
    }


def test_summary_pairs_seeds_and_times_the_level(bench: ModuleType) -> None:
    settings = bench.Settings(steps=8, eval_every=4, level=0.5)
    seeds = [
        # reinforge reaches 0.5 at step 4 (60 s), TRL only at step 8 (300 s)
        _seed_report(
            0, [[4, 60.0, 0.52], [8, 120.0, 0.60]], [[4, 150.0, 0.40], [8, 300.0, 0.55]], 2.5
        ),
        # neither side before step 8; TRL never
        _seed_report(
            1, [[4, 62.0, 0.30], [8, 124.0, 0.50]], [[4, 150.0, 0.30], [8, 310.0, 0.45]], 2.5
        ),
        _seed_report(
            2, [[4, 58.0, 0.51], [8, 118.0, 0.58]], [[4, 140.0, 0.52], [8, 290.0, 0.61]], 2.4
        ),
    ]
    summary = bench.summarize(settings, seeds, untrained=0.2)
    assert summary["differences"] == pytest.approx([0.05, 0.05, -0.03])
    diff = summary["difference"]
    assert diff["mean"] == pytest.approx(0.07 / 3)
    assert diff["low"] < diff["mean"] < diff["high"]
    assert summary["time_to_level_s"]["reinforge"] == [60.0, 124.0, 58.0]
    assert summary["time_to_level_s"]["trl"] == [300.0, math.inf, 140.0]
    assert summary["time_to_level_median_s"] == {"reinforge": 60.0, "trl": 300.0}
    assert summary["time_to_level_ratio"] == pytest.approx(5.0)
    text = bench.format_summary(settings, seeds, summary)
    assert "not reached" in text and "5.00x" in text and "(2/3)" in text


def test_report_flag_reprints_a_saved_run_at_another_level(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    settings = bench.Settings(steps=8, eval_every=4)
    seeds = [
        _seed_report(0, [[4, 60.0, 0.42], [8, 120.0, 0.6]], [[4, 150, 0.3], [8, 300, 0.5]], 2.0)
    ]
    saved = tmp_path / "results.json"
    saved.write_text(json.dumps({"settings": dataclasses.asdict(settings), "seeds": seeds}))
    assert bench.main(["--report", str(saved), "--level", "0.4"]) == 0
    out = capsys.readouterr().out
    assert "first reached 0.4" in out and "1.00" in out  # reinforge at step 4: 1.00 min


def test_old_logprobs_flag_reaches_reinforge_trainer(bench: ModuleType, tmp_path: Path) -> None:
    default = bench.reinforge_config(bench.settings_from_args(bench.parse_args([])), tmp_path, "m")
    assert default.trainer.old_logprobs == "trainer"
    before = bench.settings_from_args(bench.parse_args(["--old-logprobs", "sampler"]))
    assert bench.reinforge_config(before, tmp_path, "m").trainer.old_logprobs == "sampler"
    assert bench.parse_args(["--only", "reinforge"]).only == "reinforge"


def _one_side_run(bench: ModuleType, side: str, wall: float, acc: float, kind: str) -> dict:
    """results.json of an ``--only side`` run of seed 0 (2 steps, eval after step 2)."""
    settings = bench.Settings(steps=2, eval_every=2)
    result = {
        "train_wall_s": wall,
        "step_ends_s": [wall / 2, wall],
        "rollouts": 128,
        "backward_samples": 128.0,
        "train_reward_per_step": [0.2, 0.3],
        "response_length_per_step": [20.0, 22.0],
    }
    run = bench.WorkerRun(result, wall + 10, 3000.0, 2 * wall, [1.0])
    models = {side: {"sampled": acc, "greedy": None, "questions": 274, "seconds": 30.0}}
    models["untrained"] = {"sampled": 0.2, "greedy": None, "questions": 274, "seconds": 30.0}
    report = bench.build_report(settings, {side: run}, {"models": models})
    cpu = {"kind": kind, "model": "m", "cores": 2, "flags": [], "torch_cpu_capability": "AVX2"}
    cpu.update(native_bf16=False, auto_precision="fp32")
    report.update(seed=0, cpu=cpu, curve={side: [[2, wall, acc]]})
    settings_dict = dataclasses.asdict(settings)
    return {"settings": settings_dict, "cpu": cpu, "seeds": [report], "summary": {}}


def test_report_flag_joins_the_two_sides_of_a_seed_run_apart(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    paths = []
    for side, wall, acc in (("reinforge", 60.0, 0.61), ("trl", 150.0, 0.52)):
        paths.append(tmp_path / f"{side}.json")
        paths[-1].write_text(json.dumps(_one_side_run(bench, side, wall, acc, "AVX2")))
    assert bench.main(["--report", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    assert "2.50x" in out  # rollouts/min: 128/60 s against 128/150 s
    assert "+0.090" in out  # held-out mean@4, reinforge - TRL
    assert "W = 150.0 s" in out
    assert "CPU: AVX2" in out
    [joined] = bench.join_sides([json.loads(p.read_text())["seeds"][0] for p in paths])
    assert set(joined["sides"]) == {"reinforge", "trl"}
    assert joined["ratio"]["rollouts_per_min"] == pytest.approx(2.5)
    assert set(joined["eval"]) == {"untrained", "reinforge", "trl"}


def test_report_flag_refuses_a_side_twice_or_two_cpu_kinds(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    runs = {
        "r": _one_side_run(bench, "reinforge", 60.0, 0.6, "AVX2"),
        "r_again": _one_side_run(bench, "reinforge", 70.0, 0.6, "AVX2"),
        "t_bf16": _one_side_run(bench, "trl", 150.0, 0.5, "AVX-512 BF16"),
    }
    for name, run in runs.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(run))
    twice = [str(tmp_path / "r.json"), str(tmp_path / "r_again.json")]
    assert bench.main(["--report", *twice]) == 2
    assert "reinforge given in more than one run" in capsys.readouterr().out
    kinds = [str(tmp_path / "r.json"), str(tmp_path / "t_bf16.json")]
    assert bench.main(["--report", *kinds]) == 2
    assert "different CPU kinds" in capsys.readouterr().out
