"""Judge metrics get their own plot panels (and reach TensorBoard like every metric)."""

import json

from reinforge.monitor.plot import plot_run


def test_judge_and_masking_panels_are_drawn(tmp_path):
    rows = [
        {
            "step": step,
            "explore/reward_mean": 0.5,
            "explore/workflow/judge_success/mean": 0.5 + 0.1 * step,
            "explore/workflow/judge_gold_agreement/mean": 0.6,
            "explore/workflow/gold_reward/mean": 0.4,
            "explore/workflow/judge_latency/mean": 1.5,
            "explore/masked_experiences": 4.0 - step,
            "explore/masked/judge_unparseable": 4.0 - step,
        }
        for step in (1, 2, 3)
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    names = {p.name for p in plot_run(tmp_path)}
    assert {"judge.png", "judge_latency.png", "masked_experiences.png", "summary.png"} <= names
