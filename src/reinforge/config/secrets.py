"""Keep secrets out of what a run writes down (``config.json``, W&B, MLflow).

Two kinds of values are masked: every value that came from the environment
(``${oc.env:VAR}`` in the YAML, where API keys belong), and every value under a
key named like a credential (``api_key``, ``token``, ``secret``, ``password``).
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
_CREDENTIAL = re.compile(r"(^|_)(api_?key|access_?key|token|secret|password|passwd)$", re.I)


def env_paths(raw: Any, prefix: tuple[str, ...] = ()) -> list[str]:
    """Dotted paths of the values in a raw (unresolved) config that read the environment."""
    if isinstance(raw, dict):
        return [p for k, v in raw.items() for p in env_paths(v, (*prefix, str(k)))]
    if isinstance(raw, list):
        return [p for i, v in enumerate(raw) for p in env_paths(v, (*prefix, str(i)))]
    if isinstance(raw, str) and "${oc.env:" in raw:
        return [".".join(prefix)]
    return []


def masked(data: Any, secret_paths: list[str] | set[str], prefix: str = "") -> Any:
    """``data`` (a plain dump of the config) with secrets replaced by ``***``."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            secret = path in secret_paths or (
                _CREDENTIAL.search(str(key)) and isinstance(value, str) and value
            )
            out[key] = MASK if secret else masked(value, secret_paths, path)
        return out
    if isinstance(data, list):
        return [masked(v, secret_paths, f"{prefix}.{i}") for i, v in enumerate(data)]
    return data
