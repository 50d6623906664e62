"""Monitoring: console progress and summaries, metric sinks, plots."""

from reinforge.monitor.console import ConsoleReporter
from reinforge.monitor.jsonl import JsonlMetrics
from reinforge.monitor.plot import plot_run
from reinforge.monitor.samples import sample_completions
from reinforge.monitor.sinks import (
    MetricSink,
    MlflowSink,
    SampleSink,
    TensorBoardSink,
    WandbSink,
)

__all__ = [
    "ConsoleReporter",
    "JsonlMetrics",
    "MetricSink",
    "MlflowSink",
    "SampleSink",
    "TensorBoardSink",
    "WandbSink",
    "plot_run",
    "sample_completions",
]
