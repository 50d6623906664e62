"""Try upstream files through ``reinforge migrate`` (and a mock-engine run where they are
runnable), and compare with what the upstream code computes on its own.

Sources (read-only): unpacked Trinity-RFT release wheels, one folder per version
(``pip download --no-deps trinity-rft==V`` then unzip, ``--trinity DIR`` holds
``0.1.0/``, ``0.6.0/``...), and rLLM's git directory (``--rllm-git``, a fetched mirror:
``git archive`` of a tag or commit). Each trial copies its files into a scratch plugin
folder, migrates it, then checks behaviour; upstream-side values come from importing
the release's own ``trinity`` package in a subprocess. Prints one JSON line per trial:
``{"file", "release", "migrate", "result", "note"}``; results are summarised in
docs/migrating.md ("Tried on upstream code").

    python bench/upstream_trials.py --trinity /tmp/wheels_x --rllm-git /path/rllm.git
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from upstream_trial_tools import (
    TRIALS,
    _copy_rllm,
    _copy_trinity,
    _explore,
    _import_file,
    _migrate,
    _migrate_only,
    _upstream,
    trial,
)

MATH_PAIRS = [
    ("so the answer is \\boxed{\\frac{1}{2}}", "0.5"),
    ("\\boxed{3}", "4"),
    ("The final answer is $\\boxed{2\\sqrt{2}}$", "2\\sqrt{2}"),
    ("\\boxed{10\\%}", "10"),
    ("\\boxed{(1, 2)}", "(1,2)"),
    ("\\boxed{x = 7}", "7"),
]


@trial
def qwen25_eval(args: argparse.Namespace, scratch: Path) -> dict:
    folder = scratch / "qwen25"
    _copy_trinity(args, "0.6.0", ["trinity/common/rewards/qwen25_eval.py"], folder)
    code, unmapped = _migrate(folder)
    mod = _import_file(folder / "qwen25_eval.py", "qwen25_eval")
    ours = [mod.verify_math_answer(r, t)[0] for r, t in MATH_PAIRS]
    theirs = _upstream(
        args, "0.6.0",
        "import json; from trinity.common.rewards.qwen25_eval import verify_math_answer as v; "
        f"print(json.dumps([v(r, t)[0] for r, t in {MATH_PAIRS!r}]))",
    )  # fmt: skip
    from reinforge.trinity.common.rewards.qwen25_eval import verify_math_answer

    mirror = [verify_math_answer(r, t)[0] for r, t in MATH_PAIRS]
    same = ours == theirs
    return {
        "file": "trinity/common/rewards/qwen25_eval.py", "release": "0.6.0", "migrate": code,
        "result": "pass" if same else "differs",
        "note": f"verify_math_answer on 6 pairs: migrated file {ours}, upstream {theirs}, mirror {mirror}; unmapped {unmapped}",
    }  # fmt: skip


@trial
def eval_utils_030(args: argparse.Namespace, scratch: Path) -> dict:
    folder = scratch / "evalutils"
    _copy_trinity(args, "0.3.0", ["trinity/utils/eval_utils.py"], folder)
    code, unmapped = _migrate(folder)
    mod = _import_file(folder / "eval_utils.py", "eval_utils")
    ours = [float(mod.compute_score(r, t)) for r, t in MATH_PAIRS]
    theirs = _upstream(
        args, "0.3.0",
        "import json; from trinity.utils.eval_utils import compute_score as c; "
        f"print(json.dumps([float(c(r, t)) for r, t in {MATH_PAIRS!r}]))",
    )  # fmt: skip
    return {
        "file": "trinity/utils/eval_utils.py", "release": "0.3.0", "migrate": code,
        "result": "pass" if ours == theirs else "differs",
        "note": f"compute_score on 6 pairs: migrated {ours}, upstream {theirs}; unmapped {unmapped}",
    }  # fmt: skip


@trial
def naive_dapo(args: argparse.Namespace, scratch: Path) -> dict:
    folder = scratch / "dapo"
    _copy_trinity(args, "0.6.0", ["trinity/common/rewards/naive_dapo_score.py"], folder)
    code, unmapped = _migrate(folder)
    mod = _import_file(folder / "naive_dapo_score.py", "naive_dapo_score")
    try:
        ours = [mod.compute_score(r, t)[0] for r, t in MATH_PAIRS]
    except ModuleNotFoundError as exc:  # imported inside the grader, when called
        return {
            "file": "trinity/common/rewards/naive_dapo_score.py", "release": "0.6.0", "migrate": code,
            "result": "fails (upstream dependency)", "note": f"{exc}; unmapped {unmapped}",
        }  # fmt: skip
    theirs = _upstream(
        args, "0.6.0",
        "import json; from trinity.common.rewards.naive_dapo_score import compute_score as c; "
        f"print(json.dumps([c(r, t)[0] for r, t in {MATH_PAIRS!r}]))",
    )  # fmt: skip
    return {
        "file": "trinity/common/rewards/naive_dapo_score.py", "release": "0.6.0", "migrate": code,
        "result": "pass" if ours == theirs else "differs",
        "note": f"compute_score on 6 pairs: migrated {ours}, upstream {theirs}; unmapped {unmapped}",
    }  # fmt: skip


@trial
def reward_fn_010(args: argparse.Namespace, scratch: Path) -> dict:
    folder = scratch / "rf010"
    _copy_trinity(args, "0.1.0", ["trinity/common/rewards/reward_fn.py"], folder)
    code, unmapped = _migrate(folder)
    replies = ["<think>sum</think> <answer>4</answer>", "<answer>5</answer>"]
    mod = _import_file(folder / "reward_fn.py", "reward_fn")
    ours = [mod.MathRewardFn()(r, None, "4") for r in replies]
    theirs = _upstream(
        args, "0.1.0",
        "import json; from trinity.common.rewards.reward_fn import MathRewardFn as M; "
        f"print(json.dumps([M()(r, None, '4') for r in {replies!r}]))",
    )  # fmt: skip
    config = f"""
project: t
name: rf010
model: {{engine: mock, mock: {{replies: {json.dumps(replies[:1])}}}}}
buffer:
  batch_size: 2
  explorer_input:
    taskset:
      path: {folder / "tasks.jsonl"}
      format: {{prompt_key: question, response_key: answer}}
      default_workflow_type: simple_workflow
      default_reward_fn_type: rf010.reward_fn.MathRewardFn
plugins: [{folder}]
"""
    (folder / "tasks.jsonl").write_text('{"question": "2+2?", "answer": "4"}\n' * 2)
    rc, exps = _explore(folder, config)
    explored = [e.reward for e in exps] if rc == 0 else exps
    return {
        "file": "trinity/common/rewards/reward_fn.py (MathRewardFn, 0.1.x API)", "release": "0.1.0",
        "migrate": code, "result": "pass" if ours == theirs and rc == 0 and explored == [theirs[0]] * 2 else "fails",
        "note": f"called: migrated {ours}, upstream {theirs}; explored rewards {explored}; unmapped {unmapped}",
    }  # fmt: skip


#: files tried as far as migrating and importing: name -> (project, release, paths, note)
MIGRATE_ONLY = {
    "selector_060": ("trinity", "0.6.0", "trinity/buffer/selector/selector.py", ""),
    "agentscope_react_030": ("trinity", "0.3.0", "trinity/common/workflows/envs/agentscope/agentscope_react_workflow.py", ""),
    "intercode_sql_060": ("trinity", "0.6.0", "trinity/common/workflows/envs/intercode_sql/intercode_sql_workflow.py", "InterCode's SqlEnv is imported when a task starts"),
    "rubric_judge_052": ("trinity", "0.5.2", "trinity/common/workflows/rubric_judge_workflow.py", ""),
    "trainable_ruler_040": ("trinity", "0.4.0", "trinity/common/workflows/math_trainable_ruler_workflow.py", ""),
    "on_policy_distill_060": ("trinity", "0.6.0", "trinity/common/workflows/on_policy_distill_workflow.py", ""),
    "experience_visualizer_060": ("trinity", "0.6.0", "trinity/common/experience_visualizer.py", ""),
    "webshop_010": ("trinity", "0.1.0", "trinity/common/workflows/envs/webshop/webshop_workflow.py", ""),
    "sciworld_010": ("trinity", "0.1.0", "trinity/common/workflows/envs/sciworld/sciworld_workflow.py", ""),
    "alfworld_020": ("trinity", "0.2.0", "trinity/common/workflows/envs/alfworld/alfworld_workflow.py", ""),
    "distillation_workflow_rllm": ("rllm", "v0.3.0-pre", "rllm/workflows/distillation_workflow.py", ""),
    "eval_protocol_rllm": ("rllm", "v0.2.1", "rllm/workflows/eval_protocol_workflow.py", ""),
    "math_reward_rllm_v01": ("rllm", "6a7ac119", "rllm/rewards/math_reward.py", "rLLM v0.1"),
    "frozenlake_agent_rllm_v01": ("rllm", "6a7ac119", "rllm/agents/frozenlake_agent.py rllm/agents/system_prompts.py rllm/environments/frozenlake/frozenlake.py", "agent, prompts and environment in one folder"),
    "code_agent_rllm_v020": ("rllm", "v0.2.0", "rllm/agents/code_agent.py", ""),
}  # fmt: skip


def _register(name: str, project: str, release: str, paths: str, note: str) -> None:
    def run(args: argparse.Namespace, scratch: Path) -> dict:
        return _migrate_only(args, scratch, name, (project, release, paths.split()), note)

    run.__name__ = name
    trial(run)


for _name, _spec in MIGRATE_ONLY.items():
    _register(_name, *_spec)


@trial
def difficulty_estimator_060(args, scratch) -> dict:
    folder = scratch / "est"
    _copy_trinity(args, "0.6.0", ["trinity/buffer/selector/difficulty_estimator.py"], folder)
    code, unmapped = _migrate(folder)
    mod = _import_file(folder / "difficulty_estimator.py", "difficulty_estimator")
    feats = [[0.1, 0.5], [0.2, 0.9], [0.0, 0.3], [0.6, 1.0]]
    steps = [([0, 1], [0.25, 0.75]), ([2, 3], [0.0, 1.0]), ([1, 3], [0.5, 0.5])]
    import numpy as np

    from reinforge.buffer.difficulty_estimator import InterpolationBetaPREstimator

    def run(cls):
        est = cls(np.array(feats), m=8, lamb=0.2, rho=0.2)
        for idx, rates in steps:
            est.update(idx, rates)
        return [round(float(x), 9) for x in est.predict_pr()]

    ours, mirror = run(mod.InterpolationBetaPREstimator), run(InterpolationBetaPREstimator)
    theirs = _upstream(
        args, "0.6.0",
        "import json, numpy as np; from trinity.buffer.selector.difficulty_estimator import "
        f"InterpolationBetaPREstimator as E; e = E(np.array({feats}), m=8, lamb=0.2, rho=0.2)\n"
        f"for i, r in {steps}: e.update(i, r)\n"
        "print(json.dumps([round(float(x), 9) for x in e.predict_pr()]))",
    )  # fmt: skip
    return {
        "file": "trinity/buffer/selector/difficulty_estimator.py", "release": "0.6.0", "migrate": code,
        "result": "pass" if ours == theirs == mirror else "differs",
        "note": f"pass-rate estimates after 3 updates: migrated {ours}, upstream {theirs}, reinforge's {mirror}; unmapped {unmapped}",
    }  # fmt: skip


@trial
def search_reward_rllm(args, scratch) -> dict:
    folder = scratch / "search"
    _copy_rllm(args, "v0.2.1", ["rllm/rewards/search_reward.py"], folder)
    code, unmapped = _migrate(folder)
    mod = _import_file(folder / "search_reward.py", "search_reward")
    fn = mod.RewardSearchFn(mod.RewardConfig()) if hasattr(mod, "RewardSearchFn") else None
    names = sorted(n for n in vars(mod) if not n.startswith("_"))
    return {
        "file": "rllm/rewards/search_reward.py", "release": "v0.2.1", "migrate": code,
        "result": "pass" if code == 0 and fn is not None else "fails",
        "note": f"imports and builds RewardSearchFn: {fn is not None}; names {names[:8]}; unmapped {unmapped}",
    }  # fmt: skip


_SOLVED = [[((r * 3 + r // 3 + c) % 9) + 1 for c in range(9)] for r in range(9)]


@trial
def sudoku_060(args, scratch) -> dict:
    """Upstream's Sudoku folder as a plugin: a puzzle the mock solves (reward 1.0) and one
    it answers with a move on a filled cell (-1.0), against upstream's own workflow."""
    folder = scratch / "sudoku"
    base = "trinity/common/workflows/envs/sudoku/"
    _copy_trinity(
        args,
        "0.6.0",
        [base + f for f in ("sudoku_workflow.py", "sudoku_generator.py", "sudoku_judge.py")],
        folder,
    )
    code, unmapped = _migrate(folder)
    easy = [row[:] for row in _SOLVED]
    easy[0][0] = easy[0][1] = 0
    other = [row[:] for row in _SOLVED]
    other[8][8] = 0
    reply = f"0 0 {_SOLVED[0][0]}\n0 1 {_SOLVED[0][1]}"
    rows = [
        {"puzzle": easy, "solution": _SOLVED, "q": "a"},
        {"puzzle": other, "solution": _SOLVED, "q": "b"},
    ]
    (folder / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = f"""
project: t
name: sudoku
model: {{engine: mock, mock: {{default_reply: {json.dumps(reply)}}}}}
buffer:
  batch_size: 2
  explorer_input:
    taskset:
      path: {folder / "tasks.jsonl"}
      format: {{prompt_key: q, response_key: null}}
      default_workflow_type: sudoku.sudoku_workflow.SudokuWorkflow
plugins: [{folder}]
"""
    rc, exps = _explore(folder, config)
    explored = sorted(e.reward for e in exps) if rc == 0 else exps
    theirs = _upstream(
        args, "0.6.0",
        "import json\nfrom types import SimpleNamespace as NS\n"
        "from trinity.common.workflows.workflow import Task\n"
        "from trinity.common.workflows.envs.sudoku.sudoku_workflow import SudokuWorkflow as W\n"
        f"rows = {rows!r}\nreply = {reply!r}\n"
        "class M:\n    def chat(self, msgs, **kw):\n"
        "        return [NS(response_text=reply, tokens=[1, 2], prompt_length=1, logprobs=None)]\n"
        "out = [e.reward for r in rows for e in W(task=Task(workflow=W, raw_task=r), model=M()).run()]\n"
        "print(json.dumps(sorted(out)))",
    )  # fmt: skip
    return {
        "file": base + "sudoku_workflow.py + sudoku_generator.py + sudoku_judge.py", "release": "0.6.0",
        "migrate": code, "result": "pass" if explored == theirs else "differs",
        "note": f"rewards explored {explored}, upstream {theirs}; unmapped {unmapped}",
    }  # fmt: skip


@trial
def pass_rate_calculator_060(args, scratch) -> dict:
    """Upstream's pass-rate operator (it reads exp.info["task_index"]) in the pipeline."""
    folder = scratch / "prc"
    _copy_trinity(
        args, "0.6.0", ["trinity/buffer/operators/mappers/pass_rate_calculator.py"], folder
    )
    code, unmapped = _migrate(folder)
    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(1, 5)]
    (folder / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = f"""
project: t
name: prc
model: {{engine: mock, mock: {{policy: arithmetic, error_rate: 0.5}}}}
buffer:
  batch_size: 4
  explorer_input:
    taskset:
      path: {folder / "tasks.jsonl"}
      format: {{prompt_key: question, response_key: answer}}
      repeat_times: 4
      default_workflow_type: math_boxed_workflow
  experience_pipeline:
    operators: [{{name: prc.pass_rate_calculator.PassRateCalculator}}]
plugins: [{folder}]
"""
    rc, exps = _explore(folder, config)
    if rc:
        return {"file": "trinity/buffer/operators/mappers/pass_rate_calculator.py", "release": "0.6.0",
                "migrate": code, "result": "fails", "note": f"explore failed: {exps}; unmapped {unmapped}"}  # fmt: skip
    metrics = [json.loads(line) for line in (folder / "run" / "metrics.jsonl").open()]
    seen = sorted({k for m in metrics for k in m if "selection" in k or "selector" in k})
    mod = _import_file(folder / "pass_rate_calculator.py", "pass_rate_calculator")
    _, upstream_metrics = mod.PassRateCalculator().process(exps)
    from reinforge.buffer.task_scheduler import task_pass_rates

    indices, rates = task_pass_rates(exps)
    raw = upstream_metrics["selector_metric"][0]
    theirs = dict(zip(raw["indices"], raw["values"], strict=True))
    ours = dict(zip(indices, rates, strict=True))
    same = theirs == ours
    return {
        "file": "trinity/buffer/operators/mappers/pass_rate_calculator.py", "release": "0.6.0", "migrate": code,
        "result": "pass" if same else "differs",
        "note": f"per-task pass rates, upstream operator {theirs} vs reinforge's scheduler {ours}; metrics logged {seen}; unmapped {unmapped}",
    }  # fmt: skip


@trial
def env_utils_rllm_v01(args, scratch) -> dict:
    """rLLM v0.1's Monte-Carlo returns on a trajectory built with the mirror's types."""
    folder = scratch / "envutils"
    _copy_rllm(args, "6a7ac119", ["rllm/environments/env_utils.py"], folder)
    code, unmapped = _migrate(folder)
    mod = _import_file(folder / "env_utils.py", "env_utils")
    from reinforge.rllm.agents.agent import Step, Trajectory

    traj = Trajectory(steps=[Step(reward=r) for r in (0.0, 0.0, 1.0)])
    mod.compute_mc_return(traj, gamma=0.5)
    got = [s.mc_return for s in traj.steps]
    return {
        "file": "rllm/environments/env_utils.py", "release": "6a7ac119 (v0.1)", "migrate": code,
        "result": "pass" if got == [0.25, 0.5, 1.0] else "differs",
        "note": f"compute_mc_return(gamma=0.5) on rewards 0, 0, 1: {got} (the discounted sums are 0.25, 0.5, 1.0); unmapped {unmapped}",
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trinity", required=True)
    parser.add_argument("--rllm-git", required=True)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for fn in TRIALS:
            if args.only and fn.__name__ not in args.only.split(","):
                continue
            try:
                row = fn(args, Path(tmp))
            except Exception as exc:  # a trial that breaks is a result too
                row = {
                    "trial": fn.__name__,
                    "result": "error",
                    "note": f"{type(exc).__name__}: {exc}",
                }
            print(json.dumps({"trial": fn.__name__, **row}), flush=True)


if __name__ == "__main__":
    main()
