"""The repository's promises: README's two commands, CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_gives_the_two_setup_commands() -> None:
    blocks = _bash_blocks((ROOT / "README.md").read_text())
    assert blocks[0] == "pip install -e . && specmodel optimize --budget 16"
    assert blocks[1].startswith('pip install -e ".[test') and "pytest" in blocks[1]


def test_ci_runs_the_readme_test_command() -> None:
    test_command = _bash_blocks((ROOT / "README.md").read_text())[1]
    ci = (ROOT / ".ci" / "run").read_text()
    assert test_command in ci.splitlines()
