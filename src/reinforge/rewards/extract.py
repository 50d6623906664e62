"""Pull the final answer out of a model response.

Every built-in reward reads the answer the same way, so there is one
implementation: the content of the last ``<answer>...</answer>`` block, else the
content of the last ``\\boxed{...}``. Both scans work from the end of the text,
because a reasoning model may write several drafts and only the last one counts.
"""

from __future__ import annotations

_BOX_COMMANDS = ("\\boxed", "\\fbox")


def last_boxed(text: str) -> str | None:
    """Return the content of the last ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``.

    Nested braces are balanced (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``) and
    escaped braces (``\\{``) do not count. The spaced form ``\\boxed 5`` gives ``5``.
    Returns None when there is no box, or when the last one is cut off before its
    closing brace (a truncated response has no final answer).
    """
    start = max(text.rfind(command) for command in _BOX_COMMANDS)
    if start < 0:
        return None
    command = next(c for c in _BOX_COMMANDS if text.startswith(c, start))
    pos = start + len(command)
    if pos < len(text) and text[pos] == "{":
        return _balanced_group(text, pos)
    if pos < len(text) and text[pos] == " ":
        token = text[pos:].strip().split(maxsplit=1)
        return token[0].rstrip("$") if token else None
    return None


def _balanced_group(text: str, open_pos: int) -> str | None:
    """Content between the brace at ``open_pos`` and its matching close, or None."""
    depth = 0
    pos = open_pos
    while pos < len(text):
        char = text[pos]
        if char == "\\":
            pos += 2  # an escaped character never opens or closes a group
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[open_pos + 1 : pos]
        pos += 1
    return None


def last_tagged(text: str, tag: str = "answer") -> str | None:
    """Return the stripped content of the last ``<tag>...</tag>`` block, or None."""
    close = text.rfind(f"</{tag}>")
    if close < 0:
        return None
    opening = f"<{tag}>"
    start = text.rfind(opening, 0, close)
    if start < 0:
        return None
    return text[start + len(opening) : close].strip()


def extract_answer(text: str) -> str | None:
    """Return the final answer of a response, or None when it states none.

    Order: the last ``<answer>`` block (if it holds a ``\\boxed{}``, the box's
    content), then the last ``\\boxed{}`` anywhere.
    """
    tagged = last_tagged(text, "answer")
    if tagged is not None:
        boxed = last_boxed(tagged)
        return (boxed if boxed is not None else tagged).strip()
    boxed = last_boxed(text)
    return boxed.strip() if boxed is not None else None


def has_single_think_block(text: str) -> bool:
    """True when ``text`` has exactly one ``<think>`` and one ``</think>``, in that order."""
    if text.count("<think>") != 1 or text.count("</think>") != 1:
        return False
    return text.index("<think>") < text.index("</think>")


def strip_thinking(text: str) -> str:
    """Return what follows the last ``</think>`` (the whole text when there is none)."""
    return text.rpartition("</think>")[2].strip()
