"""The progress callback of long measurements.

The library reports progress through a plain callable and never draws
anything itself (no rich, no tqdm): the CLI turns the calls into a progress
bar (``cli.render.ProgressBar``), a benchmark prints a line, a test collects
them.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["ProgressCallback", "no_progress"]

ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, message)``: ``done`` of ``total`` items are finished
(0 <= done <= total); ``message`` says what just finished or what is running now."""


def no_progress(done: int, total: int, message: str) -> None:
    """The callback used when none is given: ignore the report."""
