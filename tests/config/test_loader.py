import pytest

from reinforge.config import ConfigError, load_config

BASE = """
project: p
name: n
model:
  engine: mock
buffer:
  batch_size: 4
  explorer_input:
    taskset:
      path: data.jsonl
      default_workflow_type: simple_workflow
"""


def write(tmp_path, text, name="cfg.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_valid_config_loads_with_defaults(tmp_path):
    cfg = load_config(write(tmp_path, BASE))
    assert cfg.buffer.batch_size == 4
    assert cfg.model.engine == "mock"
    assert cfg.explorer.runner_concurrency == 16
    assert cfg.buffer.explorer_input.taskset.default_workflow_type == "simple_workflow"
    assert str(cfg.resolved_run_dir) == "runs/p/n"
    assert cfg.config_dir == str(tmp_path.resolve())


def test_trinity_alias_default_workflow(tmp_path):
    cfg = load_config(write(tmp_path, BASE.replace("default_workflow_type", "default_workflow")))
    assert cfg.buffer.explorer_input.taskset.default_workflow_type == "simple_workflow"


def test_wrong_type_names_file_and_key(tmp_path):
    path = write(tmp_path, BASE.replace("batch_size: 4", "batch_size: ten"))
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: buffer.batch_size: Input should be a valid integer")
    assert "'ten'" in str(info.value)


def test_unknown_key_is_an_error(tmp_path):
    path = write(tmp_path, BASE.replace("batch_size: 4", "batch_size: 4\n  bacth_size: 5"))
    with pytest.raises(ConfigError, match=r"cfg.yaml: buffer.bacth_size: unknown key"):
        load_config(path)


def test_nested_unknown_key_in_taskset(tmp_path):
    path = write(tmp_path, BASE + "      promt_key: q\n")
    with pytest.raises(ConfigError, match=r"buffer.explorer_input.taskset.promt_key: unknown key"):
        load_config(path)


def test_invalid_yaml_names_file_and_line(tmp_path):
    path = write(tmp_path, "model:\n  engine: [mock\n")
    with pytest.raises(ConfigError, match=r"cfg.yaml:3:1: invalid YAML: expected ',' or ']'"):
        load_config(path)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")


def test_env_interpolation_with_default_and_value(tmp_path, monkeypatch):
    text = BASE.replace("name: n", "name: ${oc.env:RF_TEST_NAME,fallback}")
    monkeypatch.delenv("RF_TEST_NAME", raising=False)
    assert load_config(write(tmp_path, text)).name == "fallback"
    monkeypatch.setenv("RF_TEST_NAME", "from-env")
    assert load_config(write(tmp_path, text)).name == "from-env"


def test_missing_env_var_without_default_names_key(tmp_path, monkeypatch):
    monkeypatch.delenv("RF_UNSET_VAR", raising=False)
    path = write(tmp_path, BASE.replace("name: n", "name: ${oc.env:RF_UNSET_VAR}"))
    with pytest.raises(ConfigError, match=r"cfg.yaml: name: .*RF_UNSET_VAR"):
        load_config(path)


def test_overrides(tmp_path):
    cfg = load_config(write(tmp_path, BASE), ["buffer.batch_size=9", "explorer.max_timeout=3.5"])
    assert cfg.buffer.batch_size == 9 and cfg.explorer.max_timeout == 3.5


def test_taskset_needs_exactly_one_source(tmp_path):
    path = write(
        tmp_path,
        BASE.replace(
            "path: data.jsonl", "reasoning_gym: {name: basic_arithmetic}\n      path: x.jsonl"
        ),
    )
    with pytest.raises(ConfigError, match="exactly one of 'path' or 'reasoning_gym'"):
        load_config(path)


def test_out_of_range_value(tmp_path):
    path = write(tmp_path, BASE + "      rollout_args:\n        temperature: -1\n")
    with pytest.raises(
        ConfigError,
        match=r"taskset.rollout_args.temperature: Input should be greater than or equal to 0",
    ):
        load_config(path)


def test_override_inside_a_list_and_bad_override(tmp_path):
    text = (
        BASE
        + "    eval_tasksets:\n      - path: e.jsonl\n        default_workflow_type: simple_workflow\n"
    )
    cfg = load_config(write(tmp_path, text), ["buffer.explorer_input.eval_tasksets.0.limit=7"])
    assert cfg.buffer.explorer_input.eval_tasksets[0].limit == 7
    with pytest.raises(ConfigError, match=r"must look like key\.path=value"):
        load_config(write(tmp_path, text), ["buffer.batch_size"])


SAMPLER_CORRECTION = """
trainer:
  algorithm: {algorithm}
  old_logprobs: {old}
  algorithm_args: {{sampler_correction: {{type: tis, cap: 2.0}}}}
"""


def test_sampler_correction_with_the_samplers_pi_old_names_file_and_section(tmp_path):
    text = BASE + SAMPLER_CORRECTION.format(algorithm="grpo", old="sampler")
    with pytest.raises(ConfigError, match=r"cfg.yaml: trainer: .*needs old_logprobs: trainer"):
        load_config(write(tmp_path, text))


def test_sampler_correction_on_a_loss_without_token_terms_is_refused_at_start(tmp_path):
    from reinforge.launcher.modes import check_mode

    text = BASE.replace("engine: mock", "engine: hf") + "mode: both\n"
    cfg = load_config(
        write(tmp_path, text + SAMPLER_CORRECTION.format(algorithm="sft", old="trainer"))
    )
    with pytest.raises(ConfigError, match=r"trainer.algorithm: .*policy loss 'sft' takes no"):
        check_mode(cfg)
    ok = load_config(
        write(tmp_path, text + SAMPLER_CORRECTION.format(algorithm="cispo", old="trainer"))
    )
    check_mode(ok)
