"""Load a YAML config: parse, interpolate ``${oc.env:VAR,default}``, apply overrides, validate.

Every error names the file and the key path, e.g.
``cfg.yaml: buffer.batch_size: Input should be a valid integer (got 'ten')``; an
unknown key also gets the closest known keys at its level:
``cfg.yaml: buffer.batch_sise: unknown key - did you mean 'buffer.batch_size'?``.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException
from pydantic import ValidationError

from reinforge.config.schema import ReinforgeConfig, known_keys
from reinforge.config.secrets import secret_paths


class ConfigError(ValueError):
    """The configuration is invalid; the message names the file and key."""


def unknown_key_hint(loc: tuple[str | int, ...]) -> str:
    """`` - did you mean 'buffer.batch_size'?`` for an unknown key at ``loc``: the closest
    keys the schema accepts at that level, as full dotted paths ("" when none is close)."""
    keys = known_keys(loc)
    if not keys or not isinstance(loc[-1], str):
        return ""
    close = difflib.get_close_matches(loc[-1], keys, n=3, cutoff=0.6)
    if not close:
        return ""
    # keep only the runners-up about as close as the best match
    ratios = [difflib.SequenceMatcher(None, loc[-1], key).ratio() for key in close]
    close = [key for key, ratio in zip(close, ratios, strict=True) if ratio >= ratios[0] - 0.1]
    parent = "".join(f"{part}." for part in loc[:-1])
    shown = " or ".join(f"'{parent}{key}'" for key in close)
    return f" - did you mean {shown}?"


# what pydantic calls a key the section does not have: in a model, and in a dataclass
# validated as a section (``rollout_args`` is the core GenerationConfig)
_UNKNOWN_KEY = ("extra_forbidden", "unexpected_keyword_argument")


def _format_validation(source: str, exc: ValidationError) -> str:
    lines = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"]
        if err["type"] in _UNKNOWN_KEY:
            msg = "unknown key" + unknown_key_hint(tuple(err["loc"]))
        got = err.get("input")
        detail = (
            f" (got {got!r})"
            if err["type"] not in (*_UNKNOWN_KEY, "missing") and not isinstance(got, dict)
            else ""
        )
        lines.append(f"{source}: {loc}: {msg}{detail}")
    return "\n".join(lines)


def config_from_dict(
    data: dict[str, Any], source: str = "<config>", config_dir: str | None = None
) -> ReinforgeConfig:
    try:
        cfg = ReinforgeConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_format_validation(source, exc)) from None
    cfg.config_dir = config_dir
    return cfg


def load_config(path: str | Path, overrides: list[str] | None = None) -> ReinforgeConfig:
    """Read ``path``; ``overrides`` are ``key.path=value`` strings applied on top."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file '{path}' does not exist")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        detail = f"{problem} ({context})" if context else problem
        raise ConfigError(f"{where}: invalid YAML: {detail}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping, got {type(raw).__name__}")
    try:
        conf = OmegaConf.create(raw)
        for override in overrides or []:
            key, sep, value = override.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"override '{override}' must look like key.path=value")
            OmegaConf.update(conf, key.strip(), yaml.safe_load(value), merge=True)
        data = OmegaConf.to_container(conf, resolve=True)
        unresolved = OmegaConf.to_container(conf, resolve=False)  # where secrets come from
    except (OmegaConfBaseException, TypeError, ValueError, IndexError) as exc:
        if isinstance(exc, ConfigError):
            raise
        key = getattr(exc, "full_key", None)
        where = f"{key}: " if key else ""
        raise ConfigError(f"{path}: {where}{str(exc).splitlines()[0]}") from None
    cfg = config_from_dict(data, str(path), str(path.parent.resolve()))
    cfg.secret_paths = secret_paths(unresolved)
    return cfg
