"""`sweep label --review` in a real headless browser, on a queue a real rebase wrote.

Two items were reworded in the new corpus version: the browser accepts the proposal of one
on /review, and re-selects the other in the editor (removes the proposed passage, opens the
new document, selects another sentence with the Selection API, adds it, saves). The test reads
the lines the page wrote. Chromium comes from `make browser`; without it this test FAILS.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import running_label_server
from sweep.cli.golden import cmd_golden

pytestmark = pytest.mark.slow

REFUND = "You can return most products within 30 days of delivery for a full refund."
REFUND_NEW = "You can return most products within 14 days of delivery for a full refund."
WARRANTY = "The standard warranty period is two years for devices and one year for accessories."
WARRANTY_NEW = "The standard warranty period is three years for devices and one year for accessories."
RESELECTED = "Accessories bought separately keep the warranty of their own box."

SELECT_JS = """
const box = document.querySelector('#doc-view .doc-text.full');
const quote = arguments[0];
const at = box.textContent.indexOf(quote);
if (at < 0) return 'quote not in the document view';
const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
const range = document.createRange();
let pos = 0, node, startSet = false;
while ((node = walker.nextNode())) {
  const len = node.data.length;
  if (!startSet && at < pos + len) { range.setStart(node, at - pos); startSet = true; }
  if (startSet && at + quote.length <= pos + len) { range.setEnd(node, at + quote.length - pos); break; }
  pos += len;
}
const sel = window.getSelection();
sel.removeAllRanges();
sel.addRange(range);
return sel.toString();
"""


def _wait(driver: object, condition: object, timeout: float = 60) -> object:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(condition)


def _line(golden: Path, qid: str) -> dict:
    return next(json.loads(x) for x in golden.read_text().splitlines()
                if json.loads(x)["qid"] == qid)


def test_accept_one_proposal_and_reselect_another(tmp_path: Path, browser: object) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    (old / "policy.md").write_text(f"# Policy\n\n{REFUND}\n\n## Warranty\n\n{WARRANTY}\n")
    (new / "policy.md").write_text(f"# Policy\n\n{REFUND_NEW}\n\n## Warranty\n\n{WARRANTY_NEW}"
                                   f"\n\n{RESELECTED}\n")
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        json.dumps({"qid": "q1", "question": "how long to return?",
                    "evidence": [{"path": "policy.md", "quote": REFUND}]}) + "\n"
        + json.dumps({"qid": "q2", "question": "warranty on accessories?",
                      "evidence": [{"path": "policy.md", "quote": WARRANTY}]}) + "\n")
    out = tmp_path / "rebased.jsonl"
    cmd_golden(["rebase", "--golden", str(golden), "--old", str(old), "--new", str(new),
                "--out", str(out), f"cache.dir={tmp_path}/cache"], say=lambda _: None)
    assert [_line(out, q)["rebase"]["status"] for q in ("q1", "q2")] == ["edited", "edited"]

    driver = browser
    with running_label_server(["--review", str(tmp_path / "rebased.review.jsonl"), "--no-dense",
                               "tracking=off", f"cache.dir={tmp_path}/cache"], tmp_path) as url:
        driver.get(url + "review")
        assert "2</span> of 2 items to decide" in driver.page_source
        section = driver.find_element(By.CSS_SELECTOR, 'section[data-qid="q1"]')
        quotes = [b.text for b in section.find_elements(By.CSS_SELECTOR, "blockquote.passage")]
        assert quotes == [REFUND, REFUND_NEW]  # old and proposed, side by side

        section.find_element(By.CSS_SELECTOR, "button.accept").click()
        # The page reloads after a decision: wait on its source, not on an element of the old one.
        _wait(driver, lambda d: "done: accepted" in d.page_source)
        q1 = _line(out, "q1")
        assert q1["rebase"]["status"] == "accepted"
        assert q1["evidence"] == [{"path": "policy.md", "quote": REFUND_NEW}]

        driver.find_element(By.CSS_SELECTOR, 'section[data-qid="q2"] a.reselect').click()
        _wait(driver, lambda d: "Editing q2" in d.find_element(By.ID, "mode").text)
        _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR,
                                                    "#evidence-list li.evidence")) == 1)
        driver.find_element(By.CSS_SELECTOR, "#evidence-list button.show").click()
        _wait(driver, ec.presence_of_element_located(
            (By.CSS_SELECTOR, '#doc-view .doc-text.full[data-doc="policy"]')))
        driver.find_element(By.CSS_SELECTOR, "#evidence-list button.remove").click()
        _wait(driver, lambda d: not d.find_elements(By.CSS_SELECTOR,
                                                    "#evidence-list li.evidence"))
        assert driver.execute_script(SELECT_JS, RESELECTED) == RESELECTED
        button = driver.find_element(By.ID, "add-evidence")
        _wait(driver, lambda d: button.is_enabled())
        button.click()
        _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR,
                                                    "#evidence-list li.evidence")) == 1)
        driver.find_element(By.ID, "save").click()
        _wait(driver, lambda d: "Saved q2" in d.find_element(By.ID, "status").text)
        q2 = _line(out, "q2")
        assert q2["evidence"] == [{"path": "policy.md", "quote": RESELECTED}]
        assert q2["rebase"]["status"] == "reselected"
        assert q2["rebase"]["passages"][0]["old"]["text"] == WARRANTY

        driver.get(url + "review")
        assert "0</span> of 2 items to decide" in driver.page_source
    decisions = [json.loads(x) for x in
                 (tmp_path / "rebased.review.decisions.jsonl").read_text().splitlines()]
    assert [(d["qid"], d["decision"]) for d in decisions] == [("q1", "accepted"),
                                                             ("q2", "reselected")]
    from sweep.data.golden import load_golden

    assert [i.qid for i in load_golden(out).items] == ["q1", "q2"]  # both scored now
