"""Publishing and installing metrics: evaluate finds installed modules by bare name, offline."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convbench_datasets.cli import main
from convbench_datasets.errors import ConvbenchError
from convbench_datasets.publish import metric_space_files, publish_dataset


def test_installed_metrics_load_by_bare_name_offline(tmp_path: Path) -> None:
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_EVALUATE_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    env.pop("HF_MODULES_CACHE", None)
    install = subprocess.run([sys.executable, "-m", "convbench_datasets.cli", "metrics", "install"], env=env,
                             capture_output=True, text=True)
    assert install.returncode == 0, install.stderr
    code = ("import evaluate\n"
            "a = evaluate.load('ncbench_action').compute(predictions=['Repeat', 'Other'], references=[['Repeat'], ['Repeat']])\n"
            "b = evaluate.load('convbench/unnatural_sentence_prf').compute(predictions=['无'], references=[[]])\n"
            "print(a['accuracy'], b['f1'])")
    loaded = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split() == ["50.0", "100.0"]


def test_unknown_metric_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metrics", "install", "bleu"]) == 1
    assert "unknown metric(s) ['bleu']" in capsys.readouterr().err


def test_space_files() -> None:
    files = metric_space_files("ncbench_action", "convbench/ncbench_action")
    assert set(files) == {"ncbench_action.py", "README.md", "requirements.txt", "app.py"}
    card = files["README.md"].decode()
    assert card.startswith("---\ntitle: ncbench_action\nsdk: gradio\n") and "app_file: app.py" in card
    assert card.count("---\n") >= 2 and "# Metric card: `ncbench_action`" in card
    assert 'evaluate.load("convbench/ncbench_action")' in files["app.py"].decode()


def _publish_in_subprocess(folder: Path, endpoint: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_test_token"}
    env.pop("HF_HUB_OFFLINE", None)  # read when huggingface_hub is imported: a fresh process is needed
    return subprocess.run([sys.executable, "-m", "convbench_datasets.cli", "publish", "nc", "--repo-id", "convbench/nc",
                           "--folder", str(folder)], env=env, capture_output=True, text=True, timeout=120)


def test_publish_errors_are_clear(tmp_path: Path) -> None:
    import http.server
    import threading

    with pytest.raises(ConvbenchError, match="not a built dataset folder"):
        publish_dataset(tmp_path, "convbench/nc")
    (tmp_path / "README.md").write_text("---\nlicense: apache-2.0\n---\n")
    refused = _publish_in_subprocess(tmp_path, "http://127.0.0.1:9")  # nothing listens there
    assert refused.returncode == 1
    assert refused.stderr.startswith("convbench: error: could not reach the Hub for convbench/nc (")

    class Unauthorized(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.send_response(401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": "Invalid credentials"}')

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unauthorized)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        denied = _publish_in_subprocess(tmp_path, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
    assert denied.returncode == 1 and "the Hub refused convbench/nc (HTTP 401): log in" in denied.stderr
    assert "hf_test_token" not in denied.stderr


ROUND_TRIP = """
import json, sys
import datasets, evaluate
rows = datasets.load_dataset("convbench/nc", "basic", split="test").to_list()
metric = evaluate.load("convbench/ncbench_action")
scores = metric.compute(predictions=["Repeat", "Definition", "no idea"],
                        references=[r["acceptable_labels"] for r in rows[:3]],
                        patterns=[r["pattern"] for r in rows[:3]])
json.dump({"rows": rows, "scores": scores}, sys.stdout)
"""


def test_publish_then_load_back_from_a_local_hub(nc_built: Path, tmp_path: Path) -> None:
    import json

    from convbench_datasets.scoring.ncbench_action import score_actions
    from tests.support.hub_server import hub_server

    with hub_server() as (url, state):
        env = {**os.environ, "HF_ENDPOINT": url, "HF_TOKEN": "hf_test_token", "HF_HOME": str(tmp_path / "hf")}
        for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "HF_EVALUATE_OFFLINE", "HF_MODULES_CACHE"):
            env.pop(name, None)
        cli = [sys.executable, "-m", "convbench_datasets.cli", "publish"]
        for argv in (["nc", "--repo-id", "convbench/nc", "--folder", str(nc_built)],
                     ["metric", "ncbench_action", "--repo-id", "convbench/ncbench_action"]):
            done = subprocess.run(cli + argv, env=env, capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
        assert sorted(state.repos[("dataset", "convbench/nc")]) == sorted(
            str(p.relative_to(nc_built)) for p in nc_built.rglob("*") if p.is_file())
        assert set(state.repos[("space", "convbench/ncbench_action")]) == {"ncbench_action.py", "README.md", "requirements.txt", "app.py"}
        loaded = subprocess.run([sys.executable, "-c", ROUND_TRIP], env=env, capture_output=True, text=True, timeout=300,
                                cwd=tmp_path)
        assert loaded.returncode == 0, loaded.stderr
    result = json.loads(loaded.stdout)
    import datasets

    local = datasets.load_dataset(str(nc_built), "basic", split="test").to_list()
    assert result["rows"] == local
    expected = score_actions(["Repeat", "Definition", "no idea"], [r["acceptable_labels"] for r in local[:3]],
                             patterns=[r["pattern"] for r in local[:3]])
    assert result["scores"] == json.loads(json.dumps(expected))
