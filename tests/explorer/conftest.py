"""Fixtures shared by the explorer tests."""

import pytest


class RecordingReporter:
    """A reporter that keeps the explore rows (``step_done``) and the phases
    (``start``) it is given, and ignores the rest."""

    def __init__(self):
        self.rows, self.phases = [], []

    def __getattr__(self, name):
        return lambda *args, **kwargs: None

    def start(self, description, total):
        self.phases.append(description)

    def step_done(self, metrics):
        self.rows.append(metrics)


@pytest.fixture
def rows():
    return RecordingReporter()
