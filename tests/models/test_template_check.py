"""check_template: append-only chat templates pass, history-rewriting ones are caught."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from reinforge.cli.main import app
from reinforge.models.template_check import check_template, load_tokenizer
from reinforge.models.tokenizer import ByteTokenizer

# Drops the reasoning of every assistant turn but the last, as reasoning models' templates do.
STRIPS_REASONING = (
    "{% for m in messages %}{% set c = m['content'] or '' %}"
    "{% if m['role'] == 'assistant' and not loop.last and '</think>' in c %}"
    "{% set c = c.split('</think>')[-1] %}{% endif %}"
    "{{ '<|im_start|>' + m['role'] + '\n' + c + '<|im_end|>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@pytest.fixture(scope="module")
def smol(tiny_model_path: Path):
    return load_tokenizer(str(tiny_model_path))


def test_smollm2_template_is_append_only(smol) -> None:
    report = check_template(smol)
    assert report.append_only, report.problems
    assert set(report.checked) == {"chat", "system prompt", "tool call", "reasoning"}
    assert not report.native_tools


def test_reasoning_stripping_template_is_reported(smol) -> None:
    report = check_template(smol, STRIPS_REASONING)
    assert not report.append_only
    assert any(p.startswith("reasoning:") for p in report.problems)
    assert "NOT append-only" in report.summary()


def test_template_that_cannot_render_a_shape_is_a_problem(smol) -> None:
    raises = "{{ raise_exception('no tools here') if messages | selectattr('role', 'equalto', 'tool') | list else '' }}{% for m in messages %}{{ m['content'] }}{% endfor %}"
    report = check_template(smol, raises)
    assert any("failed to render" in p for p in report.problems)


def test_byte_tokenizer_is_append_only() -> None:
    assert check_template(ByteTokenizer()).append_only


def test_cli_exit_codes(tiny_model_path: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["check-template", str(tiny_model_path)])
    assert ok.exit_code == 0 and "append-only" in ok.output
    bad_file = tmp_path / "t.jinja"
    bad_file.write_text(STRIPS_REASONING)
    bad = runner.invoke(
        app, ["check-template", str(tiny_model_path), "--chat-template", str(bad_file)]
    )
    assert bad.exit_code == 1 and "falls back to one experience per turn" in bad.output
    missing = runner.invoke(app, ["check-template", "no-such-model"])
    assert missing.exit_code == 2
