"""The ``reinforge`` command, run as a user would (a real subprocess)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REINFORGE = [sys.executable, "-m", "reinforge.cli.main"]


def run(args, cwd, env_extra=None, check=False):
    env = {**os.environ, "PYTHONPATH": str(cwd), **(env_extra or {})}
    proc = subprocess.run(
        [*REINFORGE, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=120
    )
    if check and proc.returncode != 0:
        raise AssertionError(proc.stdout + proc.stderr)
    return proc


def write_tasks(path: Path, n: int) -> None:
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"question": f"What is {i} + 2?", "answer": str(i + 2)}) + "\n")


CONFIG = """
project: cli
name: t
run_dir: run
model:
  engine: mock
  mock: {{policy: arithmetic, error_rate: 0.25}}
buffer:
  batch_size: 4
  explorer_input:
    taskset:
      path: tasks.jsonl
      format: {{prompt_key: question, response_key: answer}}
      repeat_times: 2
      default_workflow_type: {workflow}
      default_reward_fn_type: plugin.Exact
    eval_tasksets:
      - name: ev
        path: tasks.jsonl
        format: {{prompt_key: question, response_key: answer}}
        repeat_times: 4
        default_workflow_type: simple_workflow
        default_reward_fn_type: plugin.Exact
explorer:
  runner_concurrency: 2
"""

PLUGIN = '''
import os
from reinforge import RewardFn, Workflow, WORKFLOWS

class Exact(RewardFn):
    def __call__(self, response, truth=None, prompt=None, **kwargs):
        return {"accuracy": float("{" + str(truth) + "}" in response)}

@WORKFLOWS.register_module("dies_at_step_3")
class DiesAtStep3(Workflow):
    """Kills the whole process (like SIGKILL) while step 3 runs."""
    can_repeat = True
    def run(self):
        if self.task.batch_id == 3:
            os._exit(9)
        exps = self.model.chat([{"role": "user", "content": self.task.raw_task["question"]}], n=self.repeat_times)
        return exps
'''


@pytest.fixture
def project(tmp_path):
    write_tasks(tmp_path / "tasks.jsonl", 12)
    (tmp_path / "plugin.py").write_text(PLUGIN)
    return tmp_path


def test_help_lists_commands(tmp_path):
    out = run(["--help"], tmp_path, check=True).stdout
    for command in ("explore", "eval", "run", "sft", "export-buffer", "config", "init"):
        assert command in out
    for option in ("--version", "--verbose", "--quiet", "--log-level", "--debug"):
        assert option in out


def test_explore_prints_summary_and_accuracy_and_writes_files(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    proc = run(["explore", "-c", "cfg.yaml"], project, check=True)
    assert "accuracy:" in proc.stdout
    assert "experiences stored" in proc.stdout
    db = project / "run" / "buffer.db"
    assert sqlite3.connect(db).execute("select count(*) from experiences").fetchone()[0] == 24
    metrics = [
        json.loads(line) for line in (project / "run" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [m["step"] for m in metrics] == [1, 2, 3]
    out = run(["export-buffer", str(db), "exp.jsonl"], project, check=True)
    assert "wrote 24 experiences" in out.stdout
    first = json.loads((project / "exp.jsonl").read_text().splitlines()[0])
    assert first["prompt_length"] < len(first["tokens"]) and first["reward"] in (0.0, 1.0)


def test_eval_prints_mean_at_n(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    proc = run(["eval", "-c", "cfg.yaml"], project, check=True)
    assert "eval/ev/mean@4:" in proc.stdout


def test_bad_config_exits_2_with_key_path(project):
    (project / "cfg.yaml").write_text(
        CONFIG.format(workflow="simple_workflow").replace("batch_size: 4", "batch_size: four")
    )
    proc = run(["explore", "-c", "cfg.yaml"], project)
    assert proc.returncode == 2
    assert "cfg.yaml: buffer.batch_size: Input should be a valid integer" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_workflow_exits_2_listing_known(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="mth_workflow"))
    proc = run(["explore", "-c", "cfg.yaml"], project)
    assert proc.returncode == 2
    assert "unknown workflow 'mth_workflow'" in proc.stderr and "math_workflow" in proc.stderr


def test_missing_model_names_the_fix(project):
    (project / "cfg.yaml").write_text(
        CONFIG.format(workflow="simple_workflow").replace(
            "engine: mock", "engine: hf\n  model_path: /no/such/model-dir"
        )
    )
    proc = run(["explore", "-c", "cfg.yaml"], project)
    assert proc.returncode == 2
    assert "model '/no/such/model-dir' is not a local directory" in proc.stderr


def test_set_override(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    run(
        ["explore", "-c", "cfg.yaml", "--set", "buffer.total_steps=1", "--run-dir", "other"],
        project,
        check=True,
    )
    db = project / "other" / "buffer.db"
    assert sqlite3.connect(db).execute("select count(*) from experiences").fetchone()[0] == 8


def test_killed_process_keeps_finished_steps(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="plugin.DiesAtStep3"))
    proc = run(["explore", "-c", "cfg.yaml"], project)
    assert proc.returncode == 9
    db = sqlite3.connect(project / "run" / "buffer.db")
    batches = sorted(int(b) for (b,) in db.execute("select distinct batch from experiences"))
    assert batches == [1, 2]
    assert db.execute("select count(*) from experiences").fetchone()[0] == 2 * 4 * 2
    statuses = db.execute("select status, count(*) from task_results group by status").fetchall()
    assert statuses == [("ok", 8)]


def test_example_mock_config_runs(tmp_path):
    cfg = REPO / "examples" / "arithmetic" / "explore_mock.yaml"
    proc = run(["explore", "-c", str(cfg), "--run-dir", str(tmp_path / "r")], tmp_path, check=True)
    assert "accuracy:" in proc.stdout
    acc = float(proc.stdout.split("accuracy:")[1].split()[0])
    assert 0.6 < acc < 0.9  # error_rate 0.25 in the example


OPERATOR_PLUGIN = """
import json, os
from reinforge.buffer.operators import ExperienceOperatorV1, EXPERIENCE_OPERATORS

LOG = os.environ["RF_OPERATOR_LOG"]

def note(event):
    with open(LOG, "a") as fh:
        fh.write(event + "\\n")

@EXPERIENCE_OPERATORS.register_module("recording_op")
class RecordingOp(ExperienceOperatorV1):
    def __init__(self, tag="a", fail=False, stop=0):
        self.tag, self.fail, self.stop = tag, fail, stop
    async def prepare(self):
        note(f"prepare {self.tag}")
    async def process(self, exps):
        note(f"process {self.tag}")
        if self.fail:
            raise RuntimeError("operator exploded")
        if self.stop:  # like Ctrl-C (2) or a kill (15) while the run works
            os.kill(os.getpid(), self.stop)
        return exps, {}
    async def close(self):
        note(f"close {self.tag}")
"""


def with_operators(project: Path, operators: str, on_error: str = "skip") -> Path:
    (project / "ops.py").write_text(OPERATOR_PLUGIN)
    text = CONFIG.format(workflow="simple_workflow") + "plugins: [ops.py]\n"
    text = text.replace(
        "explorer:\n",
        f"  experience_pipeline:\n    on_error: {on_error}\n    operators: {operators}\nexplorer:\n",
    )
    (project / "ops.yaml").write_text(text)
    return project / "ops.yaml"


@pytest.mark.parametrize("command", [["explore"], ["run", "--set", "mode=explore"]])
def test_operators_are_prepared_and_closed_once_per_run_in_order(project, command):
    cfg = with_operators(
        project, "[{name: recording_op, args: {tag: a}}, {name: recording_op, args: {tag: b}}]"
    )
    log = project / "ops.log"
    run([*command, "-c", str(cfg), "--set", "buffer.total_steps=2"], project,
        {"RF_OPERATOR_LOG": str(log)}, check=True)  # fmt: skip
    events = log.read_text().split("\n")[:-1]
    assert events[:2] == ["prepare a", "prepare b"] and events[-2:] == ["close a", "close b"]
    assert events[2:-2] == ["process a", "process b"] * 2


def test_an_operator_error_with_on_error_raise_is_a_message_and_still_closes(project):
    cfg = with_operators(project, "[{name: recording_op, args: {tag: a, fail: true}}]", "raise")
    log = project / "ops.log"
    proc = run(["explore", "-c", str(cfg)], project, {"RF_OPERATOR_LOG": str(log)})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "recording_op" in proc.stderr
    assert "exploded" in proc.stderr
    assert log.read_text().split("\n")[:-1] == ["prepare a", "process a", "close a"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
@pytest.mark.parametrize("command", [["explore"], ["run", "--set", "mode=explore"]])
def test_an_interrupted_explore_closes_the_operators_and_exits_128_plus_signal(
    project, command, sig
):
    ops = f"[{{name: recording_op, args: {{tag: a, stop: {int(sig)}}}}}, {{name: recording_op, args: {{tag: b}}}}]"
    cfg = with_operators(project, ops)
    log = project / "ops.log"
    proc = run([*command, "-c", str(cfg)], project, {"RF_OPERATOR_LOG": str(log)})
    assert proc.returncode == 128 + sig, proc.stderr
    assert "Traceback" not in proc.stderr and "interrupted" in proc.stderr
    if command[0] == "run":  # the run mode explore continues after its last stored step
        assert "run the same command to resume" in one_line(proc.stderr)
    events = log.read_text().split("\n")[:-1]
    assert events[:3] == ["prepare a", "prepare b", "process a"]
    assert events[-2:] == ["close a", "close b"] and events.count("close a") == 1


def test_sigterm_stops_a_run_started_with_sigint_ignored(project):
    """A background job of a non-interactive shell inherits SIGINT as ignored; a kill
    (SIGTERM) must still save and stop the run."""
    cfg = with_operators(project, "[{name: recording_op, args: {tag: a, stop: 15}}]")
    env = {**os.environ, "PYTHONPATH": str(project), "RF_OPERATOR_LOG": str(project / "ops.log")}
    proc = subprocess.run(
        [*REINFORGE, "run", "--set", "mode=explore", "-c", str(cfg)],
        cwd=project,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert "run the same command to resume" in one_line(proc.stderr)


def test_corrupt_buffer_and_unusable_run_dir_are_messages(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    (project / "run").mkdir()
    (project / "run" / "buffer.db").write_bytes(b"not a database" * 100)
    proc = run(["explore", "-c", "cfg.yaml"], project)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "buffer.db is not a usable buffer" in proc.stderr.replace("\n", "")
    proc = run(["export-buffer", "run/buffer.db", "out.jsonl"], project)
    assert proc.returncode == 2 and "not a usable buffer" in proc.stderr.replace("\n", "")
    proc = run(["explore", "-c", "cfg.yaml", "--run-dir", "run/buffer.db/x"], project)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot create the run directory" in proc.stderr.replace("\n", "")


def test_secrets_from_the_environment_are_masked_and_the_run_dir_is_private(project):
    text = CONFIG.format(workflow="simple_workflow").replace(
        "  engine: mock\n",
        "  engine: mock\n  openai: {api_key: '${oc.env:RF_TEST_SECRET}', base_url: '${oc.env:RF_TEST_URL}'}\n",
    )
    (project / "cfg.yaml").write_text(text)
    env = {"RF_TEST_SECRET": "sk-very-secret", "RF_TEST_URL": "http://gpu-host:1"}
    run(["explore", "-c", "cfg.yaml", "--set", "buffer.total_steps=1"], project, env, check=True)
    run_dir = project / "run"
    config = (run_dir / "config.json").read_text()
    assert "sk-very-secret" not in config
    saved = json.loads(config)["model"]["openai"]
    # a credential-named key is masked; other values from the environment are kept
    assert saved["api_key"] == "***" and saved["base_url"] == "http://gpu-host:1"
    assert (
        json.loads(config)["buffer"]["explorer_input"]["taskset"]["format"]["prompt_key"]
        == "question"
    )
    assert run_dir.stat().st_mode & 0o777 == 0o700
    for name in ("config.json", "buffer.db"):
        assert (run_dir / name).stat().st_mode & 0o777 == 0o600, name


def one_line(text: str) -> str:
    """``text`` with rich's line wrapping undone."""
    return " ".join(text.split())


@pytest.mark.parametrize(
    "rows", ["", '{"q": "1 + 1", "answer": "2"}\n' * 3], ids=["empty", "no-prompt"]
)
def test_a_taskset_without_usable_rows_is_one_line_and_exit_2(project, rows):
    (project / "tasks.jsonl").write_text(rows)
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    for command in (["explore"], ["eval"], ["run", "--set", "mode=explore"]):
        proc = run([*command, "-c", "cfg.yaml"], project)
        assert proc.returncode == 2, (command, proc.stderr)
        assert "Traceback" not in proc.stderr, command
        assert "tasks.jsonl" in one_line(proc.stderr), command
        assert one_line(proc.stderr).count("error:") == 1, command


def corrupt_buffer(project: Path) -> Path:
    """A buffer whose schema page is intact but whose data pages are garbage: it opens,
    and fails on the first read or write."""
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    run(["explore", "-c", "cfg.yaml", "--set", "buffer.total_steps=2"], project, check=True)
    db = project / "run" / "buffer.db"
    data = db.read_bytes()
    db.write_bytes(data[:4096] + b"\x5a" * (len(data) - 4096))
    return db


def test_a_buffer_corrupt_past_its_header_is_a_message_in_each_command(project):
    corrupt_buffer(project)
    for args in (
        ["explore", "-c", "cfg.yaml"],
        ["run", "-c", "cfg.yaml", "--set", "mode=explore"],
        ["export-buffer", "run/buffer.db", "out.jsonl"],
    ):
        proc = run(args, project)
        assert proc.returncode == 2, (args, proc.stderr)
        assert "Traceback" not in proc.stderr, args
        said = one_line(proc.stderr)
        assert "buffer.db is corrupt or unreadable" in said and "move it aside" in said, said


def test_a_corrupt_buffer_is_a_message_under_run_too_and_debug_shows_the_traceback(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    (project / "run").mkdir()
    (project / "run" / "buffer.db").write_bytes(b"not a database" * 100)
    proc = run(["run", "-c", "cfg.yaml", "--set", "mode=explore"], project)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "buffer.db is not a usable buffer" in one_line(proc.stderr)
    proc = run(["--debug", "run", "-c", "cfg.yaml", "--set", "mode=explore"], project)
    assert proc.returncode == 2 and "Traceback" in proc.stderr
    assert "buffer.db is not a usable buffer" in one_line(proc.stderr)


def test_a_config_json_that_cannot_be_written_is_a_message(project):
    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    (project / "run" / "config.json").mkdir(parents=True)  # in the way of the file
    proc = run(["explore", "-c", "cfg.yaml"], project)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "config.json" in one_line(proc.stderr)


def test_commands_give_sigterm_back_to_the_previous_handler(project, monkeypatch):
    """The command runs in this process: afterwards SIGTERM works as before it ran."""
    from typer.testing import CliRunner

    from reinforge.cli.main import app

    (project / "cfg.yaml").write_text(CONFIG.format(workflow="simple_workflow"))
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    before = signal.getsignal(signal.SIGTERM)
    for command in (["explore"], ["eval"], ["run", "--set", "mode=explore"]):
        result = CliRunner().invoke(
            app, [*command, "-c", "cfg.yaml", "--set", "buffer.total_steps=1"]
        )
        assert result.exit_code == 0, result.output
        assert signal.getsignal(signal.SIGTERM) is before, command
