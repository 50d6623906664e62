"""GenerationConfig: the one sampling type, from the taskset YAML to the model call."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest

from reinforge.buffer import RolloutArgs
from reinforge.buffer.taskset_config import TasksetConfig
from reinforge.config import ConfigError
from reinforge.config.loader import config_from_dict
from reinforge.core import GenerationConfig


def taskset(**rollout_args: object) -> TasksetConfig:
    return TasksetConfig(path="x.jsonl", rollout_args=rollout_args)


def load(**rollout_args: object) -> GenerationConfig:
    """The rollout_args section of a whole config, as ``reinforge`` reads a YAML file."""
    data = {"buffer": {"explorer_input": {"taskset": {"path": "x.jsonl"}}}}
    data["buffer"]["explorer_input"]["taskset"]["rollout_args"] = rollout_args
    return config_from_dict(data, "cfg.yaml").buffer.explorer_input.taskset.rollout_args


def test_the_yaml_section_is_the_core_type_itself() -> None:
    args = taskset(temperature=0.5, max_tokens=32, stop=["\n"]).rollout_args
    assert type(args) is GenerationConfig and RolloutArgs is GenerationConfig
    assert args == GenerationConfig(temperature=0.5, max_tokens=32, stop=["\n"])
    assert type(TasksetConfig(path="x.jsonl").rollout_args) is GenerationConfig
    assert taskset().model_dump()["rollout_args"] == asdict(GenerationConfig())


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("temperature", -0.1, "greater than or equal to 0"),
        ("top_p", 0, "greater than 0"),
        ("top_p", 1.5, "less than or equal to 1"),
        ("n", 0, "greater than or equal to 1"),
        ("max_tokens", 0, "greater than or equal to 1"),
        ("seed", "x", "valid integer"),
        ("stop", "\n", "valid list"),
    ],
)
def test_a_bad_value_names_the_file_and_the_field(key: str, value: object, message: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"cfg.yaml: .*taskset\.rollout_args\.{key}: .*{message}"
    ):
        load(**{key: value})


def test_an_unknown_key_is_refused_with_the_closest_known_one() -> None:
    with pytest.raises(ConfigError) as caught:
        load(temprature=0.5)
    assert str(caught.value) == (
        "cfg.yaml: buffer.explorer_input.taskset.rollout_args.temprature: unknown key"
        " - did you mean 'buffer.explorer_input.taskset.rollout_args.temperature'?"
    )


def test_values_in_bounds_load() -> None:
    args = load(temperature=0, top_p=1, n=4, max_tokens=1, top_k=20, seed=3, logprobs=None)
    assert (args.temperature, args.top_p, args.n, args.max_tokens) == (0, 1, 4, 1)
    assert (args.top_k, args.seed, args.logprobs) == (20, 3, None)


def test_a_dataclass_as_trinity_workflows_expect() -> None:
    args = GenerationConfig(n=3, stop=["</s>"])
    assert asdict(args)["n"] == 3
    assert replace(args, n=1).n == 1 and args.n == 3


def test_a_mapping_as_trinity_workflows_use_it() -> None:
    args = GenerationConfig(n=3, temperature=0.7, stop=["</s>"])

    def spread(**kwargs: object) -> dict[str, object]:
        return kwargs

    assert spread(**args) == asdict(args)
    assert {**args, "n": 1}["n"] == 1
    assert list(args.keys()) == list(asdict(args))
    assert dict(args.items()) == asdict(args)
    assert args["n"] == args.n == 3
    assert args.get("max_response_tokens", 10240) == 10240  # not a key: the default
    assert "temperature" in args and "max_response_tokens" not in args
    assert len(args) == len(asdict(args))


def test_copy_is_independent_and_takes_item_assignment() -> None:
    args = GenerationConfig(n=3, stop=["</s>"])
    run = args.copy()
    run["n"] = 1
    run["max_tokens"] = 16
    run["stop"].append("\n")
    assert type(run) is GenerationConfig
    assert (run.n, run.max_tokens, run.stop) == (1, 16, ["</s>", "\n"])
    assert (args.n, args.max_tokens, args.stop) == (3, None, ["</s>"])
    run.update(temperature=0.2)
    assert run.temperature == 0.2 and args.temperature == 1.0


def test_only_its_fields_are_keys() -> None:
    args = GenerationConfig()
    with pytest.raises(KeyError, match="unknown rollout_args key 'temprature'"):
        args["temprature"] = 0.5
    with pytest.raises(KeyError):
        _ = args["temprature"]
    with pytest.raises(TypeError, match="cannot be removed"):
        del args["seed"]
