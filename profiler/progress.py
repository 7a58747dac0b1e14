"""The progress callback of long measurements.

The library reports progress through a plain callable and never draws
anything itself (no rich, no tqdm): the CLI turns the calls into a progress
bar (``cli.render.ProgressBar``), a benchmark prints a line, a test collects
them.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["NoteCallback", "ProgressCallback", "no_progress"]

ProgressCallback = Callable[[int, int, str], None]
"""``progress(done, total, message)``: ``done`` of ``total`` items are finished
(0 <= done <= total); ``message`` says what just finished or what is running now."""


NoteCallback = Callable[[str], None]
"""``note(message)``: one line the user should read (e.g. that a torn last line of a
record was dropped); the CLI prints it, a test collects it."""


def no_progress(done: int, total: int, message: str) -> None:
    """The callback used when none is given: ignore the report."""
