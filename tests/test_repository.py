"""The repository's promises: README's two commands, CI runs the README's test command."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_gives_the_two_setup_commands() -> None:
    blocks = _bash_blocks((ROOT / "README.md").read_text())
    assert blocks[0] == "pip install . && specmodel optimize --budget 16"
    assert blocks[1].startswith('pip install -e ".[test') and "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    test_command = _bash_blocks((ROOT / "README.md").read_text())[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines()


def test_a_regular_install_carries_every_package_and_data_file(tmp_path) -> None:
    """README's run command installs the project as a wheel (not editable): the wheel
    holds the three packages, every embedded preset, architecture and hardware file, and
    the ``specmodel`` console script."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in ("specmodel", "profiler", "cli"):
        shutil.copytree(ROOT / pkg, src / pkg,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", str(src), "-w", str(tmp_path / "dist")],
                   check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("specmodel-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    data = sorted(p.relative_to(ROOT).as_posix()
                  for p in (ROOT / "specmodel" / "presets").rglob("*.json"))
    assert data and [d for d in data if d not in names] == []
    for pkg in ("specmodel", "profiler", "cli"):
        sources = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / pkg).rglob("*.py"))
        assert [s for s in sources if s not in names] == [], pkg
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "specmodel = cli.main:run" in zipfile.ZipFile(wheel).read(entry).decode()
