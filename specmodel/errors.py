"""The project's expected errors: one base type, and one way to say what was wrong.

Everything a user can cause — a bad option, a broken file, a model that will not
load, an engine that is not installed — raises a :class:`SpecmodelError` (or a
``ValueError`` from input validation, which the CLI treats the same way): one
line that names the parameter, field or file and the allowed range.  The CLI
prints that line and exits with code 2; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SpecmodelError", "describe_validation_error"]


class SpecmodelError(ValueError):
    """An expected error: bad input, a file that is not what it claims, a missing model
    or engine.  Its message is one line that says what to change."""


def describe_validation_error(err: Any, origin: str = "") -> str:
    """One line from a pydantic ``ValidationError``: the first failing field (dotted
    path) and pydantic's message, plus how many more failed.

    ``origin`` (e.g. ``'calibration x.json'``) prefixes the line.
    """
    errors = err.errors()
    first = errors[0]
    where = ".".join(str(x) for x in first["loc"])
    msg = first["msg"]
    if first.get("type") == "extra_forbidden":
        msg = "unknown field (not one of this format's fields)"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    head = f"{origin}: " if origin else ""
    if not where:  # a check across fields: its message names them itself
        return f"{head}{msg.removeprefix('Value error, ')}{more}"
    return f"{head}{where}: {msg}{more}"
