"""Monitoring: console progress and summaries, metric files."""

from reinforge.monitor.console import ConsoleReporter
from reinforge.monitor.jsonl import JsonlMetrics

__all__ = ["ConsoleReporter", "JsonlMetrics"]
