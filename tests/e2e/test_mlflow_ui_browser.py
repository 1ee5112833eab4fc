"""The link a sweep and `make ui` (`sweep ui`) print opens MLflow's runs table with the sweep's
parent run, not MLflow 3's GenAI overview; the parent carries the comparison as its
description (issue 14, item 18). A real sweep, the real `mlflow ui`, headless chromium."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from helpers import DEMO, run_cli

pytestmark = pytest.mark.slow

# Where a copy of the screenshot goes (docs/mlflow-runs.png is made from it by hand).
SCREENSHOT_COPY = Path(os.environ.get("CHUNK_SWEEP_UI_SCREENSHOT", "/tmp/mlflow-runs.png"))
LINK = re.compile(r"MLflow runs of (?:this|the latest) sweep[^:]*: (http://\S+)")
TABLE_LINK = re.compile(r"its comparison table: (http://\S+)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_printed_link_opens_the_runs_table_with_the_parent(tmp_path: Path,
                                                           browser: object) -> None:
    from mlflow import MlflowClient
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    res = run_cli("-m", "sweep", "-m", "chunk.size=128,256", "chunk.boundary=fixed,heading",
                  "retrieval=bm25", f"corpus.path={DEMO / 'corpus'}",
                  f"golden.path={DEMO / 'golden.jsonl'}", f"tracking.uri={uri}",
                  f"cache.dir={tmp_path}/cache", f"hydra.sweep.dir={tmp_path}/sweeps/demo",
                  cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    client = MlflowClient(tracking_uri=uri)
    parent = next(r for r in client.search_runs(
        [e.experiment_id for e in client.search_experiments()])
        if r.data.tags.get("chunk_sweep.role") == "sweep")
    exp_id = parent.info.experiment_id
    printed = LINK.search(res.stdout)
    assert printed, res.stdout[-2000:]
    assert printed.group(1) == (f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs"
                                "?workflowType=machine_learning")
    assert client.get_experiment(exp_id).tags["mlflow.experimentKind"] == \
        "custom_model_development"
    note = parent.data.tags["mlflow.note.content"]
    table = [line for line in note.splitlines() if line.startswith("|")]
    assert table[0].startswith("| rank | chunk.size | chunk.boundary |") or \
        table[0].startswith("| rank | chunk.boundary | chunk.size |")
    assert len(table) == 2 + 4  # header, rule, one row per configuration
    printed_table = TABLE_LINK.search(res.stdout)
    assert printed_table, res.stdout[-2000:]
    assert printed_table.group(1) == (
        f"http://127.0.0.1:5000/#/experiments/{exp_id}/runs/{parent.info.run_id}/artifacts/"
        "comparison.md?workflowType=machine_learning")

    port = int(os.environ.get("CHUNK_SWEEP_UI_TEST_PORT") or _free_port())
    ui = subprocess.Popen([sys.executable, "-m", "sweep.cli", "ui", "--port", str(port),
                           "--tracking-uri", uri], cwd=tmp_path,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        assert ui.stdout is not None
        first = ui.stdout.readline()
        assert first.startswith(f"starting the MLflow UI on http://127.0.0.1:{port}"), first
        link = None
        while link is None:  # mlflow's own lines while it starts, then the link
            line = ui.stdout.readline()
            assert line, "sweep ui ended before printing its link"
            link = LINK.search(line)
        assert link.group(1) == printed.group(1).replace(":5000/", f":{port}/")
        # printed once the server answers (issue 30: it came minutes before)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as health:
            assert health.status == 200

        driver = browser  # a fresh profile: MLflow's stored mode is its default, GenAI
        driver.get(link.group(1))
        name = parent.info.run_name
        wait = WebDriverWait(driver, 120)
        wait.until(ec.presence_of_element_located(
            (By.XPATH, f"//*[normalize-space(text())='{name}']")))
        assert "/runs" in driver.current_url and "workflowType=machine_learning" in \
            driver.current_url
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "Run Name" in body and "Usage" not in body  # the runs table, not the overview
        for close in driver.find_elements(By.CSS_SELECTOR,
                                          "[data-component-id='mlflow.assistant.chat_panel.close']"):
            close.click()  # the assistant panel would hide half the table
        driver.find_element(By.CSS_SELECTOR,
                            "button[data-component-id*='runnamecellrenderer']").click()
        children = [c.info.run_name for c in client.search_runs(
            [exp_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")]
        assert len(children) == 4
        for child in children:  # the parent expanded: its four configurations
            wait.until(ec.presence_of_element_located(
                (By.XPATH, f"//*[normalize-space(text())='{child}']")))
        shot = tmp_path / "mlflow-runs.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000
        shutil.copy(shot, SCREENSHOT_COPY)

        # The printed table link (issue 45: the parent's own page cut its description after
        # three lines): the whole comparison, every configuration, rendered as a table.
        table_line = next(TABLE_LINK.search(ln) for ln in [ui.stdout.readline()]
                          if TABLE_LINK.search(ln))
        assert table_line.group(1) == printed_table.group(1).replace(":5000/", f":{port}/")
        driver.get(table_line.group(1))

        def verdicts(d: object) -> list[str]:  # MLflow renders the markdown table as a grid
            lines = d.find_element(By.TAG_NAME, "body").text.splitlines()  # type: ignore[attr-defined]
            return [ln for ln in lines if ln == "best" or ln.startswith(("tied (", "worse ("))]

        wait.until(lambda d: len(verdicts(d)) == 4)  # every configuration, best first
        assert verdicts(driver)[0] == "best"
        body = driver.find_element(By.TAG_NAME, "body").text
        assert "Model training" in body and "Artifacts" in body and "headline" in body
        assert "/artifacts/comparison.md" in driver.current_url
        assert "workflowType=machine_learning" in driver.current_url
    finally:
        ui.send_signal(signal.SIGINT)  # Ctrl-C: sweep ui stops mlflow ui and its workers
        assert ui.wait(60) == 128 + signal.SIGINT
