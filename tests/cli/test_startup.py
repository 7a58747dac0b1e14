"""What keeps ``specmodel optimize`` quick to start (issue 15), checked without timing.

The start-up is measured by ``benchmarks/bench_cli.py``; these tests guard what made it
fast: running one of cli/main.py's commands builds that command only and imports none
of the other command modules nor anything heavy beyond numpy, pydantic and typer (not
rich: the CLI writes its own tables, :mod:`cli.terminal`);
pydantic models do not extract their field docstrings at class creation; pydantic's
plugin discovery is skipped; numpy's OpenBLAS loads with one thread, without the setting
reaching the command's child processes.  And building one command instead of all changes nothing
the user sees.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import typer

from cli import main as cli_main

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import json, os, sys
from cli.main import main
code = main(sys.argv[1:])
import pydantic.plugin._loader as loader
print(json.dumps({"code": code, "modules": sorted(sys.modules),
                  "plugins_scanned": loader._plugins is not None}))
"""


def _probe(*args: str) -> dict:
    env = {**os.environ, "COLUMNS": "80"}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True,
                          text=True, check=True, cwd=ROOT, env=env)
    return json.loads(done.stdout.splitlines()[-1])


def test_optimize_imports_only_what_it_needs() -> None:
    out = _probe("optimize", "--budget", "16")
    assert out["code"] == 0
    loaded = set(out["modules"])
    other_commands = {"cli.export", "cli.plot", "cli.compare", "cli.models", "cli.profile",
                      "cli.decode", "cli.report", "cli.errata"}
    assert not loaded & other_commands
    heavy = {"scipy", "sympy", "torch", "transformers", "vllm", "plotly", "pandas", "rich",
             "profiler", "specmodel.montecarlo", "specmodel.symbolic",
             "specmodel.decodermodel", "specmodel.formats.run_record",
             "specmodel.formats.export"}
    assert not {m for m in loaded if m.split(".")[0] in heavy or m in heavy
                or any(m.startswith(h + ".") for h in heavy)}
    assert not out["plugins_scanned"]  # pydantic's entry-point scan did not run


def test_a_command_of_its_own_module_still_runs() -> None:
    out = _probe("validate", str(ROOT / "tests" / "no-such-record.json"))
    assert out["code"] == 2 and "cli.decode" in out["modules"]
    assert "cli.profile" in out["modules"]  # the whole app was registered to find it


def _models() -> list[type]:
    from pydantic import BaseModel

    import specmodel.config
    import specmodel.formats.calibration
    import specmodel.formats.export
    import specmodel.formats.hardware
    import specmodel.formats.run_record

    mods = (specmodel.config, specmodel.formats.calibration, specmodel.formats.export,
            specmodel.formats.hardware, specmodel.formats.run_record)
    return [v for m in mods for v in vars(m).values()
            if isinstance(v, type) and issubclass(v, BaseModel) and v is not BaseModel]


def test_models_do_not_extract_field_docstrings() -> None:
    """``use_attribute_docstrings`` re-reads and re-parses each class's source at import
    (about 50 ms over the ~30 models ``optimize`` loads); the docstrings are for readers."""
    models = _models()
    assert len(models) > 30
    assert not [m.__name__ for m in models if m.model_config.get("use_attribute_docstrings")]
    for path in ("specmodel/config.py", "specmodel/formats"):
        for f in sorted((ROOT / path).rglob("*.py")) if (ROOT / path).is_dir() else [
                ROOT / path]:
            assert "use_attribute_docstrings" not in f.read_text(), f


def test_one_command_is_built_for_a_named_command() -> None:
    for args, names in ((["optimize", "--budget", "16"], {"optimize"}),
                        (["presets"], {"presets"}),
                        (["validate", "x.json"], {"validate"}),
                        (["profile", "run", "--help"], {"profile"})):
        group = typer.main.get_command(cli_main._app_for(args))
        assert set(group.commands) == names, args
    whole = set(typer.main.get_command(cli_main.app).commands)
    assert {"optimize", "export", "profile", "validate", "errata"} <= whole
    for args in ([], ["--help"], ["--version"], ["optimze"], ["no-such-command"]):
        assert set(typer.main.get_command(cli_main._app_for(args)).commands) == whole, args


def _through(app: typer.Typer, args: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code: object = app(args=args, standalone_mode=False, prog_name="specmodel")
        except typer.Exit as e:
            code = ("exit", e.exit_code)
        except Exception as e:  # usage errors and the library's: compare their text
            message = e.format_message() if hasattr(e, "format_message") else str(e)
            code = (type(e).__name__, message)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("args", [
    ["optimize", "--help"],
    ["optimize", "--budget", "16", "--json"],
    ["optimize", "--budget", "0"],
    ["optimize", "--bogus"],
    ["optimize", "--mode", "bogus"],
    ["simulate", "--process", "async", "--k1", "3", "--samples", "1000", "--json"],
    ["theorems", "--help"],
    ["validate", "--help"],
    ["profile", "--help"],
    ["profile", "tokens", "--help"],
    ["models", "--help"],
])
def test_one_command_app_answers_as_the_whole_app(args: list[str], monkeypatch) -> None:
    """Help, usage errors and output are the same through the one-command copy."""
    monkeypatch.setenv("COLUMNS", "80")
    one = _through(cli_main._app_for(args), args)
    whole = _through(cli_main.app, args)
    assert one == whole
    assert one[1] or one[2] or one[0] not in (None, 0)



_THREADS = """
import os
import cli
import numpy
tasks = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
print(tasks, os.environ.get("OPENBLAS_NUM_THREADS"))
"""


@pytest.mark.parametrize("user_setting", [None, "2"])
def test_the_cli_loads_numpy_with_one_blas_thread_unless_told_otherwise(
        user_setting: str | None) -> None:
    """Starting OpenBLAS's thread pool costs the command ~50 ms (bench_cli); the CLI
    loads numpy with one thread, leaves no trace of it in the environment its children
    get, and a user's own OPENBLAS_NUM_THREADS wins."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user_setting is not None:
        env["OPENBLAS_NUM_THREADS"] = user_setting
    done = subprocess.run([sys.executable, "-c", _THREADS], capture_output=True, text=True,
                          check=True, cwd=ROOT, env=env)
    tasks, seen = done.stdout.split()
    if tasks == "-1":
        pytest.skip("no /proc/self/task to count the process's threads")
    if user_setting is None:
        assert seen == "None" and tasks == "1"
    else:
        assert seen == user_setting and int(tasks) == min(2, os.cpu_count() or 1)


def _leaf_commands(group, prefix: str = ""):
    for name, sub in getattr(group, "commands", {}).items():
        yield prefix + name, sub
        yield from _leaf_commands(sub, prefix + name + " ")


def test_every_command_summary_is_one_line() -> None:
    """A command list (``specmodel --help``, ``specmodel profile --help``) shows each
    command's first paragraph with its line breaks kept (typer's rich markup), so a
    summary that runs over two docstring lines prints broken mid-sentence: every
    command's help opens with a one-line summary, its details after a blank line."""
    whole = typer.main.get_command(cli_main.app)
    broken = []
    for name, command in _leaf_commands(whole):
        first = (command.help or "").strip().split("\n\n")[0]
        if not first or "\n" in first:
            broken.append(name)
    assert not broken, f"commands whose summary is empty or spans lines: {broken}"


def test_help_paragraphs_print_unbroken(capsys, monkeypatch) -> None:
    """typer's rich help keeps a docstring's line breaks inside a paragraph; the CLI
    joins them, so a paragraph wraps at the terminal's width, not where the source
    did — for every command, and in the help a user prints."""
    app = cli_main._reflowed(cli_main._whole_app())
    whole = typer.main.get_command(app)
    for name, command in _leaf_commands(whole):
        for paragraph in (command.help or "").split("\n\n"):
            assert "\n" not in paragraph, f"{name}: {paragraph!r}"
    monkeypatch.setenv("COLUMNS", "300")
    assert cli_main.main(["profile", "contention", "--help"]) == 0
    out = capsys.readouterr().out
    assert ("A call of each model alone, then one of each submitted together to two worker "
            "threads, as the async decoder starts a draft and a target step; every other "
            "figure of the engine costs kept.") in out
