"""The vLLM server helper without vLLM: its command line, and its start/stop logic run on
stand-in processes (a tiny HTTP server that answers /health, one that dies, one that hangs).
The real server is started by tests/live/test_vllm_server.py."""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import profiler.vllm_server as vs
from cli.main import main
from specmodel.errors import SpecmodelError

HEALTHY = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()
    def log_message(self, *a):
        pass
print("stand-in server up", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def _stand_in(monkeypatch: pytest.MonkeyPatch, code: str) -> None:
    """Make :func:`vs.vllm_server` run ``code`` (with the port as argv[1]) instead of vLLM."""
    def command(model: object, port: int, **_: object) -> list[str]:
        return [sys.executable, "-c", code, str(port)]

    monkeypatch.setattr(vs, "server_command", command)


def test_server_command() -> None:
    spec = {"method": "ngram", "num_speculative_tokens": 4}
    cmd = vs.server_command("/m", 8001, speculative_config=spec)
    assert cmd[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert cmd[cmd.index("--host") + 1] == "127.0.0.1" and cmd[cmd.index("--port") + 1] == "8001"
    assert json.loads(cmd[cmd.index("--speculative-config") + 1]) == spec
    assert "--enforce-eager" in cmd and cmd[cmd.index("--dtype") + 1] == "bfloat16"
    assert "--speculative-config" not in vs.server_command("/m", 8001)
    with pytest.raises(ValueError, match="port must lie in"):
        vs.server_command("/m", 0)
    assert 1 <= vs.free_port() <= 65535


def test_speculative_config_from_export(tmp_path: Path) -> None:
    export = tmp_path / "e.json"
    assert main(["export", "--engine", "vllm", "--budget", "16", "-o", str(export)]) == 0
    spec = vs.speculative_config_from_export(export)
    assert spec == json.loads(export.read_text())["speculative_config"]
    assert spec["method"] == "ngram" and spec["num_speculative_tokens"] == 4
    none = tmp_path / "none.json"
    assert main(["export", "--engine", "vllm", "--budget", "1", "-o", str(none)]) == 0
    assert json.loads(none.read_text())["speculative_config"] is None  # M = 1: no drafts
    with pytest.raises(SpecmodelError, match="would not speculate"):
        vs.speculative_config_from_export(none)


def test_start_wait_and_stop_a_stand_in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _stand_in(monkeypatch, HEALTHY)
    spec = {"method": "ngram", "num_speculative_tokens": 2}
    with vs.vllm_server(tmp_path, speculative_config=spec, startup_timeout=60,
                        log=tmp_path / "s.log") as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        with urllib.request.urlopen(f"{server.url}/health", timeout=5) as r:
            assert r.status == 200
        assert server.speculative_config == spec and server.startup_seconds > 0
        pid = server.pid
    assert "stand-in server up" in (tmp_path / "s.log").read_text()
    with pytest.raises(ProcessLookupError):  # the process group is gone
        os.killpg(pid, 0)


def test_server_that_exits_or_hangs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _stand_in(monkeypatch, "print('model will not load: boom', flush=True); raise SystemExit(3)")
    with pytest.raises(vs.ServerError, match=r"exited with code 3(.|\n)*boom"), \
            vs.vllm_server(tmp_path, startup_timeout=60):
        pass
    _stand_in(monkeypatch, "import time; print('loading', flush=True); time.sleep(120)")
    t0 = time.perf_counter()
    with pytest.raises(vs.ServerError, match=r"did not answer .*/health within 2 s(.|\n)*"
                                             "loading"), vs.vllm_server(tmp_path,
                                                                        startup_timeout=2):
        pass
    assert time.perf_counter() - t0 < 30


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="model must be a model folder"), \
            vs.vllm_server(tmp_path / "missing"):
        pass
    with pytest.raises(ValueError, match="exclusive"), \
            vs.vllm_server(tmp_path, speculative_config={}, export=tmp_path / "e.json"):
        pass
