"""``reinforge view``: a missing run directory is a one-line error (the page itself is
tested through a real browser in tests/viewer/test_browser.py)."""

from typer.testing import CliRunner

from reinforge.cli.main import app


def test_missing_run_dir_exits_2_naming_it(tmp_path):
    result = CliRunner().invoke(app, ["view", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert "nope" in result.output and "does not exist" in result.output
