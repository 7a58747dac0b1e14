"""Options shared by the ``specmodel`` commands, declared once.

The model's inputs — which calibration (``--calibration`` file or ``--preset``, else
the embedded default), direct overrides of α1, c1, α2, c2, and where a command takes
them the budget ``--budget`` and ``--mode`` — are added to a command by the
:func:`model_inputs` decorator, which resolves them into one :class:`ModelInputs`
(the validated :class:`~specmodel.parameters.Parameters`, the
:class:`~specmodel.formats.calibration.Calibration` or None, and a
:class:`CalibrationSource` saying where the numbers came from) and hands that to
the command as its ``inputs`` argument.  A library error about a number the user
typed is re-raised naming the option (``--alpha1``, ``--budget``), not the
library's parameter name.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from cli import render
from specmodel.errors import SpecmodelError
from specmodel.parameters import Parameters

if TYPE_CHECKING:
    from specmodel.formats.calibration import Calibration

__all__ = [
    "Budget",
    "CalibrationOpt",
    "CalibrationSource",
    "Concurrency",
    "JsonOut",
    "MethodChoice",
    "ModeChoice",
    "ModelInputs",
    "PresetOpt",
    "ProcessChoice",
    "TargetBatchingOpt",
    "batchings_of",
    "model_inputs",
    "check_device_options",
    "options_named",
    "resolve_inputs",
    "unescape",
]


class ModeChoice(StrEnum):
    """Lookahead Reasoning algorithm."""

    sync = "sync"
    async_ = "async"


class MethodChoice(StrEnum):
    """How the optimizer evaluates configurations."""

    closed_form = "closed-form"
    mc = "mc"


class ProcessChoice(StrEnum):
    """Which process `simulate` runs."""

    token = "token"
    sync = "sync"
    async_ = "async"
    hybrid = "hybrid"


Budget = Annotated[int, typer.Option("--budget", "-M", min=1, help="Parallelism budget M (>= 1).")]
CalibrationOpt = Annotated[
    Path | None, typer.Option("--calibration", "-c", help="Calibration JSON file.")
]
PresetOpt = Annotated[str | None, typer.Option("--preset", help="Embedded calibration name.")]
Alpha1 = Annotated[float | None, typer.Option("--alpha1", help="Step acceptance rate α1.")]
C1 = Annotated[float | None, typer.Option("--c1", help="Draft-step cost ratio c1.")]
Alpha2 = Annotated[float | None, typer.Option("--alpha2", help="Token acceptance rate α2.")]
C2 = Annotated[float | None, typer.Option("--c2", help="Draft-token cost ratio c2.")]
Mode = Annotated[ModeChoice, typer.Option("--mode", help="sync (Algorithm 1) or async.")]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
Concurrency = Annotated[int, typer.Option(
    "--concurrency", "-N", min=1,
    help="Requests served together (needs a calibration with a measured T(b)).")]

TargetBatchingOpt = Annotated[str | None, typer.Option(
    "--target-batching",
    help="Decoder model: the async candidates' target batching: call (one target call at "
         "a time), continuous (each step joins the engine's running batch, as vLLM serves) "
         "or both. Default: both for a what-if (--target-arch: a serving engine), call for "
         "a calibration's engine costs (measured on transformers, which has no running "
         "batch).")]


def batchings_of(value: str | None, default: str = "call") -> tuple[str, ...]:
    """The batchings ``--target-batching VALUE`` (``default`` when not given) asks the
    decoder model to weigh: one of :data:`specmodel.config.TARGET_BATCHINGS`, or ``both``."""
    from specmodel.config import TARGET_BATCHINGS

    choices = {**{b: (b,) for b in TARGET_BATCHINGS}, "both": TARGET_BATCHINGS}
    value = default if value is None else value
    if value not in choices:
        raise SpecmodelError(f"--target-batching must be one of {', '.join(choices)}, "
                             f"got {value!r}")
    return choices[value]


_NUMBERS = ("alpha1", "c1", "alpha2", "c2")
_NUMBER_OPTIONS = {"alpha1": "--alpha1", "c1": "--c1", "alpha2": "--alpha2", "c2": "--c2"}


def unescape(text: str) -> str:
    """Decode backslash escapes typed on a command line ('\\n' -> newline)."""
    return text.encode().decode("unicode_escape")


@dataclass(frozen=True)
class CalibrationSource:
    """Where a command's α1, c1, α2, c2 came from."""

    name: str
    """The calibration's name, or 'command line' when all four numbers were typed."""
    source: str
    """The calibration's provenance source (measured / paper / user)."""
    file: str | None = None
    """The calibration file given with --calibration, if any."""
    default: bool = False
    """True when neither --calibration nor --preset was given (the embedded default)."""
    overridden: tuple[str, ...] = ()
    """The numbers given directly (alpha1, c1, alpha2, c2), overriding the calibration."""
    from_calibration: bool = True
    """False when no calibration was read (all four numbers typed)."""

    def to_dict(self) -> dict[str, Any]:
        """``{name, source, file, default, overridden}``."""
        return {"name": self.name, "source": self.source, "file": self.file,
                "default": self.default, "overridden": list(self.overridden)}

    def describe(self) -> str:
        """One line saying which calibration was used."""
        if not self.from_calibration:
            return "parameters given on the command line"
        text = f"calibration '{self.name}' ({self.source})"
        if self.default:
            text += " — the embedded default; pass --calibration or --preset to change it"
        if self.overridden:
            text += f"; overridden: {', '.join(self.overridden)}"
        return text


@dataclass(frozen=True)
class ModelInputs:
    """The shared options of a command, resolved."""

    params: Parameters
    """α1, c1, α2, c2 after the overrides."""
    calibration: Calibration | None
    """The calibration read (None when all four numbers were typed)."""
    source: CalibrationSource
    """Where the numbers came from."""
    budget: int = 16
    """--budget (commands without it: the default 16, unused)."""
    mode: str = "async"
    """--mode (commands without it: 'async', unused)."""
    given: bool = False
    """True when any of --calibration, --preset, --alpha1 … --c2 was typed."""
    typed_options: Mapping[str, str] = field(default_factory=dict)
    """Library parameter name → the option the user typed (for error messages)."""

    def batch_cost_curve(self) -> Any:
        """The calibration's measured T(b), or None; marked ``seconds_per_step`` when the
        calibration's times are seconds per decode step (unit 's/step')."""
        if self.calibration is None:
            return None
        curve = self.calibration.batch_cost_curve()
        if curve is None:
            return None
        import dataclasses

        cost = self.calibration.batch_cost
        absolute = cost is not None and cost.unit == "s/step"
        return dataclasses.replace(curve, seconds_per_step=absolute)

    def priced_curve(self, concurrency: int) -> Any:
        """The measured T(b) for a command that takes ``--concurrency``; None when the
        calibration has none, which only concurrency 1 accepts."""
        curve = self.batch_cost_curve()
        if curve is None and concurrency != 1:
            raise SpecmodelError(
                f"--concurrency {concurrency} needs a calibration with a measured T(b) "
                "(batch_cost): the flat-budget f·g model has no notion of concurrency")
        return curve

    def print_source(self, *, stderr: bool = False) -> None:
        """The dim 'Using calibration …' line."""
        render.dim(f"Using {self.source.describe()}.", stderr=stderr)


@contextmanager
def options_named(typed: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a ``ValueError`` whose message starts with a library parameter or field
    name the user typed as an option, naming the option instead (``alpha1 must …`` →
    ``--alpha1 must …``, ``token.method: …`` → ``--token-method: …``)."""
    try:
        yield
    except ValueError as e:
        msg = str(e)
        for internal, option in typed.items():
            if msg.startswith((f"{internal} ", f"{internal}:")):
                raise SpecmodelError(f"{option}{msg[len(internal):]}") from e
        raise


DEVICE_OPTIONS = {"device": "--device", "dtype": "--dtype"}
"""The device checks' parameter names -> the options typed (for their error lines)."""


def check_device_options(device: str, dtype: str) -> None:
    """``--device`` and ``--dtype`` checked before any model loads (an unknown device or
    dtype, CUDA absent, a dtype the GPU cannot run), the error naming the option typed."""
    from profiler.hardware import check_device

    with options_named(DEVICE_OPTIONS):
        check_device(device, dtype)


def resolve_inputs(
    calibration: Path | None = None,
    preset: str | None = None,
    alpha1: float | None = None,
    c1: float | None = None,
    alpha2: float | None = None,
    c2: float | None = None,
    *,
    budget: int = 16,
    mode: str = "async",
    extra_options: Mapping[str, str] | None = None,
) -> ModelInputs:
    """Merge a calibration (file, preset or the default) with direct overrides.

    The calibration is read unless all four numbers are given and neither
    ``calibration`` nor ``preset`` is.
    """
    direct = {"alpha1": alpha1, "c1": c1, "alpha2": alpha2, "c2": c2}
    typed = {k: _NUMBER_OPTIONS[k] for k, v in direct.items() if v is not None}
    typed.update({"M": "--budget", "mode": "--mode", **(extra_options or {})})
    overridden = tuple(k for k in _NUMBERS if direct[k] is not None)
    given = calibration is not None or preset is not None or bool(overridden)
    if calibration is not None and preset is not None:
        raise SpecmodelError("--calibration and --preset are exclusive: give one")
    with options_named({**typed, "preset": "--preset"}):
        if calibration is None and preset is None and len(overridden) == 4:
            params = Parameters(**direct)  # type: ignore[arg-type]
            return ModelInputs(params, None, CalibrationSource(
                "command line", "user", overridden=overridden, from_calibration=False),
                budget, mode, given, typed)
        from specmodel.formats.calibration import resolve_calibration

        cal = resolve_calibration(calibration, preset)
        params = cal.parameters().replace(**direct)
    source = CalibrationSource(
        cal.name, cal.provenance.source, str(calibration) if calibration else None,
        calibration is None and preset is None, overridden)
    return ModelInputs(params, cal, source, budget, mode, given, typed)


_F = TypeVar("_F", bound=Callable[..., Any])


def model_inputs(
    *, budget: bool = False, mode: bool = False, options: Mapping[str, str] | None = None
) -> Callable[[_F], _F]:
    """Add the shared options to a command and hand it ``inputs: ModelInputs``.

    The decorated function declares a parameter ``inputs`` (not an option); the
    decorator replaces it by ``--calibration/-c``, ``--preset``, ``--alpha1``, ``--c1``,
    ``--alpha2``, ``--c2`` (and ``--budget/-M``, ``--mode`` when asked), resolves them
    with :func:`resolve_inputs`, and runs the command inside :func:`options_named`, so
    an error about a typed number names its option.  ``options`` maps further library
    parameter names to the command's own options (e.g. ``{'k1': '--k1'}``).
    """

    def decorate(fn: _F) -> _F:
        sig = inspect.signature(fn, eval_str=True)
        if "inputs" not in sig.parameters:
            raise TypeError(f"{fn.__name__} must take an 'inputs' parameter")
        own = [p for p in sig.parameters.values() if p.name != "inputs"]
        kw = inspect.Parameter.KEYWORD_ONLY
        shared: list[inspect.Parameter] = []
        if budget:
            shared.append(inspect.Parameter("budget", kw, default=16, annotation=Budget))
        shared += [
            inspect.Parameter("calibration", kw, default=None, annotation=CalibrationOpt),
            inspect.Parameter("preset", kw, default=None, annotation=PresetOpt),
            inspect.Parameter("alpha1", kw, default=None, annotation=Alpha1),
            inspect.Parameter("c1", kw, default=None, annotation=C1),
            inspect.Parameter("alpha2", kw, default=None, annotation=Alpha2),
            inspect.Parameter("c2", kw, default=None, annotation=C2),
        ]
        if mode:
            shared.append(inspect.Parameter("mode", kw, default=ModeChoice.async_,
                                            annotation=Mode))
        names = [p.name for p in shared]
        clash = [n for n in names if n in sig.parameters]
        if clash:
            raise TypeError(f"{fn.__name__} declares shared options itself: {clash}")

        @functools.wraps(fn)
        def command(*args: Any, **kwargs: Any) -> Any:
            values = {n: kwargs.pop(n) for n in names}
            m = values.pop("mode", ModeChoice.async_)
            inputs = resolve_inputs(**values, mode=ModeChoice(m).value, extra_options=options)
            with options_named(inputs.typed_options):
                return fn(*args, inputs=inputs, **kwargs)

        params = own + shared
        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command  # type: ignore[return-value]

    return decorate

