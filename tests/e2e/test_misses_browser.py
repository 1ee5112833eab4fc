"""misses.html of a real demo job in headless chromium: evidence and boundaries by their DOM."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from helpers import run_cli

pytestmark = pytest.mark.slow

SCREENSHOT_COPY = Path("/tmp/misses-screenshot.png")


def test_misses_page_in_a_browser(tmp_path: Path, browser: object) -> None:
    from selenium.webdriver.common.by import By

    # Chunks of 512 tokens are longer than MiniLM reads (256): the demo then has truncation
    # misses, whose pages show the cut as well as the evidence and the boundaries.
    res = run_cli("-m", "sweep", "chunk.size=512", f"cache.dir={tmp_path}/cache", "tracking=off",
                  f"hydra.run.dir={tmp_path}/run", cwd=tmp_path, timeout=900)
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads((tmp_path / "run" / "misses.json").read_text())
    view = next(q for q in data["questions"] if q["cause"] == "truncated")
    passage = view["passages"][0]
    e0, e1 = passage["evidence"]
    w0 = passage["window"][0]
    evidence = passage["text"][e0 - w0:e1 - w0]

    driver = browser  # the page, as a person opens it from disk
    driver.get((tmp_path / "run" / "misses.html").as_uri())
    item = driver.find_element(By.ID, f"q-{view['qid']}")
    assert item.get_attribute("data-cause") == "truncated"
    item.find_element(By.TAG_NAME, "summary").click()
    marks = item.find_elements(By.CSS_SELECTOR, ".passage mark")
    assert "".join(m.get_attribute("textContent") for m in marks) == evidence
    labels = [e.get_attribute("data-chunk")
              for e in item.find_elements(By.CSS_SELECTOR, ".passage .lab")]
    assert labels == [c["chunk_id"] for c in passage["chunks"]]
    assert item.find_elements(By.CSS_SELECTOR, ".passage .cut"), "no truncation mark"
    rows = item.find_elements(By.CSS_SELECTOR, "table tr")
    assert len(rows) == 1 + len(view["hits"])
    driver.execute_script("arguments[0].scrollIntoView()", item)
    shot = tmp_path / "misses.png"
    driver.save_screenshot(str(shot))
    shutil.copy(shot, SCREENSHOT_COPY)
