"""Keep secrets out of what a run writes down (``config.json``, W&B, MLflow).

Masked with ``***``: every string under a key named like a credential (``api_key``,
``secret_key``, ``hf_token``, ``password``, ``Authorization``, ...), every value read
from an environment variable named like one (``${oc.env:OPENAI_API_KEY}``,
``${oc.env:HF_TOKEN}``, wherever it is used), and every value interpolated from a
masked one (``${model.openai.api_key}``). The user name and password of a URL
(``http://user:pw@host``) are masked wherever they appear. Names such as
``prompt_key``, ``max_tokens`` or ``pad_token`` are not credentials and are kept.

Other values taken from the environment are kept as they are: ``config.json`` is
what ``reinforge export``, the model card and ``reinforge view`` read the run's
settings from, and a ``model_path: ${oc.env:REINFORGE_MODEL,...}`` masked there
would leave them without the base model.
"""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# a word that makes any key a credential
_SECRET_WORDS = {
    "apikey",
    "auth",
    "authorization",
    "cookie",
    "credential",
    "credentials",
    "passphrase",
    "passwd",
    "password",
    "pwd",
    "secret",
    "secrets",
}
# "<word>_key" is a credential for these words (prompt_key, response_key are not)
_KEY_OWNERS = {"api", "access", "private", "secret", "signing", "encryption", "client", "ssh"}
# "<word>_token" names a vocabulary token, not a credential
_VOCAB_TOKENS = {"pad", "eos", "bos", "unk", "sep", "cls", "mask", "stop", "start", "end"}
_INTERPOLATION = re.compile(r"\$\{([^${}]*)\}")
_ENV_VARIABLE = re.compile(r"\$\{oc\.env:\s*([^,}\s]+)")
# "scheme://user:password@" (or "scheme://token@"): what comes before the "@"
_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")


def is_credential_name(key: str) -> bool:
    """Whether a config key names a credential (``api_key``, ``hfToken``, ``password``)."""
    words = [w.lower() for w in _WORDS.findall(str(key))]
    if not words:
        return False
    if _SECRET_WORDS & set(words):
        return True
    last, before = words[-1], words[-2] if len(words) > 1 else None
    if last in ("key", "token"):
        if before is None:
            return True
        return before in _KEY_OWNERS if last == "key" else before not in _VOCAB_TOKENS
    return False


def _leaves(raw: Any, prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(raw, dict):
        return [leaf for k, v in raw.items() for leaf in _leaves(v, (*prefix, str(k)))]
    if isinstance(raw, list):
        return [leaf for i, v in enumerate(raw) for leaf in _leaves(v, (*prefix, str(i)))]
    return [(prefix, raw)]


def _referenced(path: tuple[str, ...], reference: str) -> str | None:
    """The dotted path an interpolation ``${reference}`` at ``path`` reads, or None for
    a resolver call (``${oc.env:X}`` is handled on its own)."""
    reference = reference.strip()
    if ":" in reference or not reference:
        return None
    dots = len(reference) - len(reference.lstrip("."))
    if not dots:
        return reference
    base = path[: max(len(path) - dots, 0)]  # ".x" is a sibling, "..x" an uncle
    return ".".join((*base, reference[dots:]))


def secret_paths(raw: Any) -> list[str]:
    """Dotted paths of the values of a raw (unresolved) config that hold secrets: under
    a credential-named key, read from a credential-named environment variable, or
    interpolated from such a value. Other environment values are not secrets."""
    leaves = [(path, value) for path, value in _leaves(raw) if isinstance(value, str)]
    secret = {
        ".".join(path)
        for path, value in leaves
        if (path and is_credential_name(path[-1]) and value)
        or any(is_credential_name(name) for name in _ENV_VARIABLE.findall(value))
    }
    changed = True
    while changed:  # follow interpolations until no new secret turns up
        changed = False
        for path, value in leaves:
            dotted = ".".join(path)
            if dotted in secret:
                continue
            for reference in _INTERPOLATION.findall(value):
                target = _referenced(path, reference)
                if target is not None and any(
                    s == target or s.startswith(target + ".") for s in secret
                ):
                    secret.add(dotted)
                    changed = True
                    break
    return sorted(secret)


def mask_url_credentials(text: str) -> str:
    """``text`` with the user name and password of every URL in it masked
    (``http://user:pw@host`` → ``http://***@host``)."""
    return _URL_USERINFO.sub(rf"\1{MASK}@", text)


def masked(data: Any, secret_paths: list[str] | set[str], prefix: str = "") -> Any:
    """``data`` (a plain dump of the config) with secrets replaced by ``***``."""
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            secret = path in secret_paths or (
                is_credential_name(str(key)) and isinstance(value, str) and value
            )
            out[key] = MASK if secret else masked(value, secret_paths, path)
        return out
    if isinstance(data, list):
        return [masked(v, secret_paths, f"{prefix}.{i}") for i, v in enumerate(data)]
    if isinstance(data, str):
        return mask_url_credentials(data)
    return data
