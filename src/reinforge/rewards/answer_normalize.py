"""Math answer extraction, normalisation and comparison, as the upstream reward helpers do it.

Trinity-RFT's ``trinity.utils.eval_utils`` / ``math_eval_utils`` and rLLM's
``rllm.rewards.math_utils`` judge answers by normalising strings (the MATH benchmark's
convention: ``\\dfrac`` is ``\\frac``, units, ``$`` and spaces go, ``0.5`` is
``\\frac{1}{2}``, ``x = 3`` is ``3``) and, failing that, by comparing values. The mirror
modules re-export these functions under the upstream names.

What differs: where upstream simplifies with sympy, the value comparison here is
math-verify's (``reinforge.rewards.math_check``, the same checker the reward classes
use, in a worker with a timeout).
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any

from reinforge.rewards.math_check import match_score

# -- finding the answer -------------------------------------------------------------


def _closing_brace(text: str, open_pos: int) -> int | None:
    """The index of the brace closing the one at ``open_pos``, or None."""
    depth = 0
    for index in range(open_pos, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    return None


def last_boxed_only_string(text: str) -> str | None:
    """The last ``\\boxed{...}`` (or ``\\fbox{...}``) of ``text``, wrapper included.

    ``\\boxed 5`` (a space, no braces) gives ``\\boxed 5`` up to the next ``$``. None
    when there is no box or its braces never close.
    """
    if not isinstance(text, str):
        return None
    start = text.rfind("\\boxed")
    if start < 0:
        start = text.rfind("\\fbox")
        if start < 0:
            return None
    head = text[start:]
    if head.startswith("\\boxed ") and "{" not in head.split(" ", 1)[0]:
        return "\\boxed " + head[len("\\boxed ") :].split("$")[0]
    brace = text.find("{", start)
    if brace < 0:
        return None
    end = _closing_brace(text, brace)
    return None if end is None else text[start : end + 1]


def remove_boxed(boxed: str | None) -> str | None:
    """The content of ``\\boxed{...}`` / ``\\boxed x`` / ``\\fbox{...}``; None otherwise."""
    if not boxed:
        return None
    for prefix in ("\\boxed ", "\\boxed{", "\\fbox{"):
        if boxed.startswith(prefix):
            if prefix.endswith("{"):
                return boxed[len(prefix) : -1] if boxed.endswith("}") else None
            return boxed[len(prefix) :]
    return None


def extract_boxed_answer(text: str) -> str | None:
    """The content of the last box of ``text``, or None."""
    return remove_boxed(last_boxed_only_string(text))


def find_boxed_answer(text: str, timeout: float | None = None) -> str | None:
    """Trinity-RFT's name: the content of the last ``\\boxed`` (``\\boxed{..}`` or one
    character after ``\\boxed``). ``timeout`` is accepted and unused (no regex here)."""
    boxed = extract_boxed_answer(text)
    if boxed is not None:
        return boxed
    match = re.search(r"\\boxed\s*([^\s{])(?!.*\\boxed)", text or "", re.DOTALL)
    return match.group(1) if match else None


def extract_final_answer(text: str) -> str | None:
    """rLLM's ``extract_answer``: the last ``<|begin_of_box|>...<|end_of_box|>`` span
    (GLM's box tokens), else the last ``\\boxed{}``; None when neither is there."""
    spans = re.findall(r"<\|begin_of_box\|>([\s\S]*?)<\|end_of_box\|>", text or "")
    if spans:
        return spans[-1].strip()
    if "\\boxed" in (text or ""):
        return extract_boxed_answer(text)
    return None


def extract_math_answer(text: Any) -> str | None:
    """Trinity-RFT's Qwen2.5-Math ``extract_answer``: the last box (normalised), else what
    follows "the answer is" / "final answer is" / "答案是", else the last number."""
    if not isinstance(text, str):
        return None
    if "boxed" in text:
        tail = text.split("boxed")[-1]
        if tail.startswith("{"):
            end = _closing_brace(tail, 0)
            if end is not None:
                return strip_string(tail[1:end])
        match = re.search(r"\{?([^$}]+)\}?", tail)
        if match:
            return strip_string(match.group(1))
    for pattern in (r"(?:final|the)\s+answer\s+is\s*:?\s*(.+)", r"答案是\s*:?\s*(.+)"):
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            found = strip_string(match.group(1))
            return found[:-1] if found and found.endswith(".") else found
    numbers = re.findall(r"[-+]?\d*\.?\d+", text.replace(",", ""))
    return numbers[-1] if numbers else None


# -- normalising ------------------------------------------------------------------

#: Trinity-RFT's ``unit_texts`` (0.3.0's ``trinity.utils.math_eval_utils``, 0.6.0's
#: ``trinity.common.rewards.qwen25_eval``; the same list): words dropped from an answer,
#: each a regex between non-word characters (so ``.`` matches any character), in this
#: order, then each again with an ``s`` where it has none
_UNIT_BASE = (
    "east", "degree", "mph", "kmph", "ft", "m sqaure", " m east", "sq m", "deg", "mile", "q .",
    "monkey", "prime", "ratio", "profit of rs", "rd", "o", "gm", "p . m", "lb", "tile", "per",
    "dm", "lt", "gain", "ab", "way", "west", "a .", "b .", "c .", "d .", "e .", "f .", "g .",
    "h .", "t", "a", "h", "no change", "men", "soldier", "pie", "bc", "excess", "st", "inches",
    "noon", "percent", "by", "gal", "kmh", "c", "acre", "rise", "a . m", "th", "π r 2", "sq",
    "mark", "l", "toy", "coin", "sq . m", "gallon", "° f", "profit", "minw", "yr", "women",
    "feet", "am", "pm", "hr", "cu cm", "square", "v â € ™", "are", "rupee", "rounds", "cubic",
    "cc", "mtr", "s", "ohm", "number", "kmph", "day", "hour", "minute", "min", "second", "man",
    "woman", "sec", "cube", "mt", "sq inch", "mp", "∏ cm ³", "hectare", "more", "sec", "unit",
    "cu . m", "cm 2", "rs .", "rs", "kg", "g", "month", "km", "m", "cm", "mm", "apple",
    "liter", "loss", "yard", "pure", "year", "increase", "decrease", "d", "less", "Surface",
    "litre", "pi sq m", "s .", "metre", "meter", "inch",
)  # fmt: skip
UNITS = _UNIT_BASE + tuple(u + "s" for u in _UNIT_BASE if not u.endswith("s"))


def _fix_fracs(text: str) -> str:
    """``\\frac12`` -> ``\\frac{1}{2}``, ``\\frac1{2}`` -> ``\\frac{1}{2}``."""
    parts = text.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part.startswith("{"):
            out += part
            continue
        if len(part) < 2:
            return text
        numerator, second = part[0], part[1]
        if second == "{":
            out += "{" + numerator + "}" + part[1:]
        else:
            out += "{" + numerator + "}{" + second + "}" + part[2:]
    return out


def _fix_a_slash_b(text: str) -> str:
    """``3/4`` (two integers) -> ``\\frac{3}{4}``."""
    match = re.fullmatch(r"(-?\d+)/(\d+)", text)
    return f"\\frac{{{match.group(1)}}}{{{match.group(2)}}}" if match else text


def _fix_sqrt(text: str) -> str:
    """``\\sqrt2`` -> ``\\sqrt{2}``."""
    return re.sub(r"\\sqrt(\w+)", r"\\sqrt{\1}", text)


def normalize_math_answer(answer: str | None) -> str | None:
    """The MATH benchmark's string normalisation (Hendrycks et al.), as rLLM's
    ``mathd_normalize_answer`` and Trinity-RFT's Hendrycks helpers apply it."""
    if answer is None:
        return None
    text = answer.strip()
    boxed_text = re.match(r"^\\text\{(?P<inner>.+?)\}", text)
    if boxed_text:
        text = boxed_text.group("inner").strip()
    text = text.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    text = text.replace("tfrac", "frac").replace("dfrac", "frac")
    text = text.replace("\\left", "").replace("\\right", "")
    text = text.replace("^{\\circ}", "").replace("^\\circ", "")
    text = text.replace("\\$", "")
    if "\\text{ " in text:  # a unit written after the value
        text = text.split("\\text{ ")[0]
    text = text.replace("\\%", "").replace("%", "")
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text.startswith("."):
        text = "0" + text
    sides = text.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:  # "k = 3" -> "3"
        text = sides[1]
    text = _fix_sqrt(text).replace(" ", "")
    text = _fix_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _fix_a_slash_b(text)


def mathd_normalize_answer(answer: str | None) -> str | None:
    """rLLM's name for :func:`normalize_math_answer`."""
    return normalize_math_answer(answer)


def strip_string(answer: Any) -> str | None:
    """Trinity-RFT's Qwen2.5-Math normalisation, step for step as its ``strip_string``
    (the same in 0.3.0's ``trinity.utils.math_eval_utils`` and 0.6.0's
    ``trinity.common.rewards.qwen25_eval``), so that answers score as upstream scores them:
    the MATH rules plus matrices, ``\\text{}`` and :data:`UNITS` dropped, number words
    read (word2number), ``x=`` prefixes, trailing ``.0`` and one pair of enclosing braces
    or parentheses removed. Upstream's quirks are kept: a bare ``%`` goes before ``\\%``,
    so ``10\\%`` leaves ``10\\``; ``inf`` inside ``\\infty`` is replaced again. None
    for nothing left."""
    if answer is None:
        return None
    text = str(answer).strip().replace("\n", "").rstrip(".")
    text = text.replace("\\!", "").replace("\\$", "").replace("$", "")
    text = text.replace("%", "").replace("\\%", "")
    text = re.sub(r"\\begin\{array\}\{.*?\}", r"\\begin{pmatrix}", text)
    text = re.sub(r"\\end\{array\}", r"\\end{pmatrix}", text).replace("bmatrix", "pmatrix")
    text = text.replace("tfrac", "frac").replace("dfrac", "frac")
    text = text.replace("\\neq", "\\ne").replace("\\leq", "\\le").replace("\\geq", "\\ge")
    text = text.replace("\\left", "").replace("\\right", "")
    text = text.replace("\\{", "{").replace("\\}", "}")
    text = re.sub(r"\\mbox\{.*?\}", "", text).replace("\\mathbf", "")
    text = text.replace("^{\\circ}", "").replace("^\\circ", "")
    text = re.sub(r"\\text\{(.*?)\}", r"\1", text)
    for _ in range(2):
        for unit in UNITS:
            stripped = re.sub(r"(^|\W)" + unit + r"($|\W)", r"\1\2", text)
            if stripped != "":
                text = stripped
    with contextlib.suppress(ValueError):  # no number word in it
        text = str(_word_to_num(text))
    text = re.sub(r"^[a-zA-Z]\s*=\s*", "", text)
    text = text.replace("infinity", "\\infty").replace("inf", "\\infty")
    text = re.sub(r"(\d+)\.0+([^\d]|$)", r"\1\2", text)
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if text.startswith("."):
        text = "0" + text
    text = text.replace(" ", "")
    if "\\sqrt" in text:
        text = re.sub(r"\\sqrt\s*(\w+)", r"\\sqrt{\1}", text)
    text = _int_slash_int(_fix_fracs(text))
    if (text.startswith("{") and text.endswith("}")) or (
        text.startswith("(") and text.endswith(")")
    ):
        text = text[1:-1]
    if not text:
        return None
    return text.strip()


def _word_to_num(text: str) -> int | float:
    """word2number's reading of ``text`` (``"five"`` -> 5; ValueError when it has no
    number word), as upstream's ``strip_string`` reads it. word2number is the
    ``reinforge[trinity]`` extra, as it is a dependency of Trinity-RFT itself."""
    try:
        from word2number import w2n
    except ImportError as exc:
        raise ImportError(
            "strip_string (Trinity-RFT's math normalisation) reads number words with "
            "word2number: pip install 'reinforge[trinity]'"
        ) from exc
    return w2n.word_to_num(text)


def _int_slash_int(text: str) -> str:
    """Upstream's ``fix_a_slash_b``: ``a/b`` -> ``\\frac{a}{b}`` where each side is an
    integer written as Python writes it back (``3/4``, ``-3/4``, not ``03/4``) or holds
    ``sqrt``."""
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        a, b = (p if "sqrt" in p else int(p) for p in parts)
    except ValueError:
        return text
    return f"\\frac{{{a}}}{{{b}}}" if text == f"{a}/{b}" else text


def remove_right_units(text: str) -> str:
    """What comes before ``\\text{ `` (a unit written after the value)."""
    return text.split("\\text{ ")[0] if "\\text{ " in text else text


# -- comparing --------------------------------------------------------------------


def is_equiv(str1: str | None, str2: str | None, verbose: bool = False) -> bool:
    """Equal after :func:`strip_string` (two Nones are equal, one None is not)."""
    if str1 is None and str2 is None:
        return True
    if str1 is None or str2 is None:
        return False
    try:
        return strip_string(str1) == strip_string(str2)
    except Exception:
        return str1 == str2


def _as_number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").rstrip("%"))
    except ValueError:
        return None


def _split_elements(text: str) -> list[str] | None:
    """The elements of ``(a, b)`` / ``[a, b]`` / ``a, b``; None for a single value."""
    inner = text[1:-1] if text[:1] in "([" and text[-1:] in ")]" else text
    if "," not in inner or re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", inner):
        return None
    return [part.strip() for part in inner.split(",")]


def math_equal(prediction: str | None, reference: str | None, timeout: float = 5.0) -> bool:
    """Whether two extracted answers are the same value: equal strings, numbers within a
    relative 1e-4, tuples element by element (brackets must agree), equations by their
    right-hand sides, else math-verify."""
    if prediction is None or reference is None:
        return False
    if prediction == reference:
        return True
    pred_num, ref_num = _as_number(prediction), _as_number(reference)
    if pred_num is not None and ref_num is not None:
        return math.isclose(pred_num, ref_num, rel_tol=1e-4)
    pred_parts, ref_parts = _split_elements(prediction), _split_elements(reference)
    if pred_parts is not None and ref_parts is not None:
        same_brackets = prediction[:1] + prediction[-1:] == reference[:1] + reference[-1:]
        return (
            same_brackets
            and len(pred_parts) == len(ref_parts)
            and all(math_equal(p, r, timeout) for p, r in zip(pred_parts, ref_parts, strict=True))
        )
    if prediction.count("=") == 1 and reference.count("=") == 1:
        return math_equal(prediction.split("=")[1].strip(), reference.split("=")[1].strip())
    return _verify(reference, prediction, timeout)


def _verify(gold: str, prediction: str, timeout: float | None) -> bool:
    """math-verify's verdict on two bare answers, in a worker with ``timeout``."""
    return match_score(gold, prediction, timeout=timeout) > 0


def verify_math_answer(response: str, ground_truth: Any) -> tuple[float, dict[str, Any]]:
    """Trinity-RFT's Qwen2.5-Math check: ``(1.0 or 0.0, details)`` comparing the answers
    :func:`extract_math_answer` finds in the response and in the ground truth."""
    prediction = extract_math_answer(response)
    truth = extract_math_answer(str(ground_truth))
    correct = math_equal(prediction, truth)
    details = {"parsed_prediction": prediction, "ground_truth": truth, "is_correct": correct}
    return (1.0 if correct else 0.0), details


def compute_boxed_score(solution_str: str, ground_truth: str) -> float:
    """Trinity-RFT's ``eval_utils.compute_score``: 1.0 when the response's last box equals
    the ground truth (its own box's content, when it has one) under :func:`is_equiv`."""
    answer = extract_boxed_answer(solution_str)
    if answer is None:
        return 0.0
    boxed_truth = extract_boxed_answer(ground_truth)
    return (
        1.0 if is_equiv(answer, boxed_truth if boxed_truth is not None else ground_truth) else 0.0
    )


def grade_answer_mathd(given_answer: str | None, ground_truth: str | None) -> bool:
    """rLLM's check: equal after the MATH normalisation."""
    return mathd_normalize_answer(ground_truth) == mathd_normalize_answer(given_answer)


def _is_integer_text(text: str) -> bool:
    return re.fullmatch(r"-?\d+", text.replace(",", "")) is not None


def _is_fraction_text(text: str) -> bool:
    return re.fullmatch(r"-?\\frac\{-?\d+\}\{\d+\}", text) is not None


def grade_answer_sympy(given_answer: str | None, ground_truth: str | None) -> bool:
    """rLLM's value check: after normalising, equal strings match; tuples must have the
    same brackets and length; an integer answer must be the same integer and a fraction
    the same (unreduced ones stay unequal); anything else compares by value (math-verify
    here, sympy upstream)."""
    truth = normalize_math_answer(ground_truth) if ground_truth is not None else None
    given = normalize_math_answer(given_answer) if given_answer is not None else None
    if truth is None:
        return False
    if truth == given:
        return True
    if not given:
        return False
    truth_parts = _split_elements(truth) or [truth]
    given_parts = _split_elements(given) or [given]
    if len(truth_parts) > 1 and (truth[0] != given[0] or truth[-1] != given[-1]):
        return False
    if len(truth_parts) != len(given_parts):
        return False
    for want, got in zip(truth_parts, given_parts, strict=True):
        if _is_fraction_text(want) and _is_fraction_text(got):
            ok = want == got
        elif _is_integer_text(want) != _is_integer_text(got):
            ok = False
        elif _is_integer_text(want):
            ok = int(want.replace(",", "")) == int(got.replace(",", ""))
        else:
            ok = _verify(want, got, timeout=5.0)
        if not ok:
            return False
    return True


def grade_answer_verl(solution: str, ground_truth: str) -> bool:
    """rLLM's verl-style check: the response's final answer against the ground truth's
    (its box's content when boxed), by :func:`grade_answer_mathd` or
    :func:`grade_answer_sympy`."""
    if not ground_truth:
        return False
    if "\\boxed" in ground_truth:
        ground_truth = extract_final_answer(ground_truth) or ""
    given = extract_final_answer(solution)
    if given is None:
        return False
    return grade_answer_mathd(given, ground_truth) or grade_answer_sympy(given, ground_truth)
