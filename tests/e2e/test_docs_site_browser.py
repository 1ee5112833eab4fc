"""The documentation site as a reader opens it: built strictly from docs/ (the reference pages
generated from the code), its start page and the configuration reference in headless
chromium, and a screenshot of the start page."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

pytestmark = pytest.mark.slow

SCREENSHOT_COPY = Path("/tmp/docs-site-screenshot.png")


def test_the_built_site_opens_with_its_reference(tmp_path: Path, browser: object) -> None:
    from selenium.webdriver.common.by import By

    from sweep.config.schema import Config

    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                            "--site-dir", str(site)], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]

    driver = browser
    driver.get((site / "index.html").as_uri())
    assert driver.find_element(By.TAG_NAME, "h1").text == "chunk-sweep"
    nav = {a.get_attribute("textContent").strip()
           for a in driver.find_elements(By.CSS_SELECTOR, "nav a.md-nav__link")}
    assert {"Getting started", "Configuration keys", "Commands", "Metric registry"} <= nav
    shot = tmp_path / "home.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 20_000  # a drawn page, not a blank one
    shutil.copy(shot, SCREENSHOT_COPY)

    driver.get((site / "reference" / "configuration" / "index.html").as_uri())
    cells = {c.text for c in driver.find_elements(By.CSS_SELECTOR, "td:first-child code")}
    assert "chunk.size" in cells and "index.ef_search" in cells
    row = driver.find_element(By.XPATH, "//tr[td[1]/code[text()='chunk.size']]")
    assert row.find_elements(By.TAG_NAME, "td")[2].text == str(Config().chunk.size)
