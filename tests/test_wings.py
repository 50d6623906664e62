"""The rule in tests/conftest.py: a test whose wing is missing is skipped, and under CI
fails instead, however it skips (the ``needs`` marker, the ``vllm_python`` fixture, a
``pytest.importorskip`` of a wing's module in a test, a module or a conftest). Run on
inner pytest sessions with this conftest, where a wing is made missing by putting
``None`` in ``sys.modules`` (``find_spec`` and ``import`` then both fail for it)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).resolve().parent / "conftest.py").read_text()

HIDE_RAY = "import sys\nsys.modules['ray'] = None\n"
TESTS = {
    "test_marker.py": HIDE_RAY
    + "import pytest\n\n@pytest.mark.needs('ray')\ndef test_needs_ray():\n    pass\n",
    "test_in_test.py": HIDE_RAY
    + "import pytest\n\ndef test_importorskip():\n    pytest.importorskip('ray')\n",
    "test_fixture.py": "def test_vllm(vllm_python):\n    pass\n",
    "test_other_skip.py": (
        "import pytest\n\n"
        "def test_not_a_wing():\n    pytest.skip('glibc only')\n\n"
        "def test_not_a_wing_module():\n    pytest.importorskip('no_such_module_xyz')\n\n"
        "@pytest.mark.xfail(reason='missing component ray: an expected failure')\n"
        "def test_xfail():\n    assert False\n\n"
        "def test_present_wing_runs():\n    pass\n"
    ),
}
SKIP_COUNT = len(["marker", "in_test", "fixture", "not_a_wing", "not_a_wing_module"])


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(**{name[:-3]: text for name, text in TESTS.items()})
    monkeypatch.setenv("REINFORGE_VLLM_PYTHON", str(pytester.path / "no-venv" / "python"))
    return pytester


@pytest.mark.parametrize("ci", ["", "0", "false"])
def test_outside_ci_a_missing_wing_is_skipped_with_how_to_install(inner, monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    result = inner.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=SKIP_COUNT, xfailed=1)
    out = result.stdout.str()
    assert "missing component ray: the ray module (pip install 'reinforge[ray]')" in out
    assert f"missing component vllm: no vLLM venv at {inner.path}/no-venv/python" in out
    assert "could not import 'ray'" in out


@pytest.mark.parametrize("ci", ["true", "1"])
def test_under_ci_a_missing_wing_fails_and_other_skips_stay_skips(inner, monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    result = inner.runpytest("-rs")
    # the marker and the fixture fail in setup (errors), importorskip in the call
    result.assert_outcomes(passed=1, skipped=2, errors=2, failed=1, xfailed=1)
    result.stdout.fnmatch_lines(["*CI is set: a missing component fails the run*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_under_ci_a_module_or_conftest_importorskip_of_a_wing_fails(pytester, monkeypatch):
    monkeypatch.setenv("CI", "true")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_module=HIDE_RAY + "import pytest\npytest.importorskip('ray')\n")
    wing_dir = pytester.mkpydir("wing")
    (wing_dir / "conftest.py").write_text(HIDE_RAY + "import pytest\npytest.importorskip('ray')\n")
    (wing_dir / "test_in_wing.py").write_text("def test_it():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["ERROR test_module.py - Skipped: could not import 'ray'*"])
    result.stdout.fnmatch_lines(["ERROR wing - Skipped: could not import 'ray'*"])
    monkeypatch.setenv("CI", "")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2)


def test_an_unknown_wing_is_an_error_not_a_skip(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile("import pytest\n\n@pytest.mark.needs('rya')\ndef test_typo():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*unknown wing 'rya'*"])
