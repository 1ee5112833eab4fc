"""`sweep label --queue` in a real headless browser: three queued questions worked through.

A `sweep label --queue` process serves a copy of the demo with a hand-written queue of three
candidates (two logged questions, one synthetic with its passage). The browser labels the
first (evidence selected in its document, saved), rejects the second as not answerable from
the corpus, labels the third from the passage it was generated from, and sees the queue done.
Then the test reads the golden file, the decisions file and abstentions.jsonl.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_label_browser import QUOTE_1, QUOTE_2, SELECT_JS, _wait

from helpers import DEMO, running_label_server

pytestmark = pytest.mark.slow

SCREENSHOT_COPY = Path("/tmp/label-queue-screenshot.png")

Q1 = "how many days do i have to return a kettle for a full refund"
Q2 = "what is the capital of mongolia"
Q3 = "What is the standard warranty period for devices?"


def _cid(question: str) -> str:
    return "c-" + hashlib.sha256(question.lower().encode()).hexdigest()[:12]


def _queue(corpus: Path) -> list[dict]:
    text = (corpus / "warranty" / "warranty-terms.md").read_text(encoding="utf-8")
    start = text.index(QUOTE_2)
    common = {"feedback": None, "negative_count": 0, "trace_id": None, "first_seen": None,
              "last_seen": None, "retrieved": [], "passage": None}
    return [
        {**common, "cid": _cid(Q1), "question": Q1, "count": 12, "source": "log",
         "source_ref": "support.csv:14", "reason": "negative feedback (3 of 12 asks)",
         "priority": 1, "feedback": "negative", "negative_count": 3,
         "variants": ["how long to return a kettle?"],
         "retrieved": [{"doc_id": "faq", "text": "Returns are accepted within 14 days."}]},
        {**common, "cid": _cid(Q2), "question": Q2, "count": 2, "source": "log",
         "source_ref": "support.csv:90", "reason": "asked 2 times", "priority": 2,
         "variants": []},
        {**common, "cid": _cid(Q3), "question": Q3, "count": 1, "source": "synthetic",
         "source_ref": "warranty/warranty-terms.md:" + str(start), "reason": "synthetic",
         "priority": 3, "variants": [],
         "passage": {"doc_id": "warranty/warranty-terms", "start": start,
                     "end": start + len(QUOTE_2), "text": QUOTE_2}},
    ]


@pytest.fixture
def queue_server(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    work = tmp_path / "demo"
    shutil.copytree(DEMO / "corpus", work / "corpus")
    shutil.copy(DEMO / "golden.jsonl", work / "golden.jsonl")
    shutil.copy(DEMO / "golden.reference.yaml", work / "golden.reference.yaml")
    queue = work / "queue.jsonl"
    queue.write_text("".join(json.dumps(c) + "\n" for c in _queue(work / "corpus")))
    with running_label_server(["--corpus", str(work / "corpus"), "--golden",
                               str(work / "golden.jsonl"), "--queue", str(queue),
                               "--target", "62", "--no-dense", "tracking=off",
                               f"cache.dir={tmp_path}/cache"], tmp_path) as url:
        yield url, work / "golden.jsonl", queue


def _select_and_add(driver: object, source: str, quote: str, n: int) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    _wait(driver, ec.presence_of_element_located(
        (By.CSS_SELECTOR, f'#doc-view .doc-text.full[data-doc="{source[:-3]}"]')))
    assert driver.execute_script(SELECT_JS, quote) == quote
    button = driver.find_element(By.ID, "add-evidence")
    _wait(driver, lambda d: button.is_enabled())
    button.click()
    _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR,
                                                "#evidence-list li.evidence")) == n)


def _saved_qid(driver: object) -> str:
    from selenium.webdriver.common.by import By

    _wait(driver, lambda d: "Saved " in d.find_element(By.ID, "status").text)
    m = re.search(r"Saved (\S+) to", driver.find_element(By.ID, "status").text)
    assert m
    return m.group(1)


def test_work_three_queued_questions(queue_server: tuple[str, Path, Path], browser: object,
                                     tmp_path: Path) -> None:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    url, golden, queue = queue_server
    before = golden.read_bytes()
    driver = browser
    driver.get(url)

    def shown() -> str:
        return driver.find_element(By.ID, "queue-candidate").text

    def question_is(q: str) -> None:
        def ready(d: object) -> bool:
            try:  # a reject reloads the page: elements of the old one go stale
                return d.find_element(By.ID, "question").get_attribute("value") == q \
                    and q in shown()
            except (StaleElementReferenceException, NoSuchElementException):
                return False
        _wait(driver, ready)

    # 1: pre-filled with its reason, count, variants and what the assistant retrieved; searched
    question_is(Q1)
    for words in ("negative feedback (3 of 12 asks)", "asked 12×", "how long to return a kettle?",
                  "Returns are accepted within 14 days", "support.csv:14"):
        assert words in shown()
    assert "golden set 60 / 62" in driver.find_element(By.ID, "queue-counter").text
    _wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#bm25-results .hit"))
    link = driver.find_element(By.CSS_SELECTOR, 'a.open[data-source="returns/refund-policy.md"]')
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()
    _select_and_add(driver, "returns/refund-policy.md", QUOTE_1, 1)
    driver.find_element(By.ID, "save").click()
    first_qid = _saved_qid(driver)

    # 2: the next one comes by itself; rejected as not answerable from the corpus
    question_is(Q2)
    assert "1 labelled" in driver.find_element(By.ID, "queue-counter").text
    assert driver.find_element(By.ID, "queue-why").get_attribute("value") == "unanswerable"
    driver.find_element(By.ID, "queue-reject").click()

    # 3: synthetic, shown with the passage it was generated from; labelled from that passage
    question_is(Q3)
    assert "generated from" in shown() and "synthetic" in shown()
    driver.find_element(By.CSS_SELECTOR, "#queue-candidate a.open").click()
    _select_and_add(driver, "warranty/warranty-terms.md", QUOTE_2, 1)
    driver.save_screenshot(str(tmp_path / "queue.png"))
    shutil.copy(tmp_path / "queue.png", SCREENSHOT_COPY)
    driver.find_element(By.ID, "save").click()
    third_qid = _saved_qid(driver)
    _wait(driver, lambda d: "The queue is done" in shown())
    assert "2 labelled, 1 rejected, 0 left" in driver.find_element(By.ID, "queue-counter").text

    after = golden.read_bytes()
    assert after.startswith(before)
    new = [json.loads(x) for x in after[len(before):].decode().splitlines()]
    assert [(n["qid"], n["question"], n["source"], n["source_ref"], n["cid"]) for n in new] == [
        (first_qid, Q1, "log", "support.csv:14", _cid(Q1)),
        (third_qid, Q3, "synthetic", _queue(golden.parent / "corpus")[2]["source_ref"],
         _cid(Q3))]
    assert [e["quote"] for n in new for e in n["evidence"]] == [QUOTE_1, QUOTE_2]
    decisions = [json.loads(x) for x in
                 queue.with_name("queue.decisions.jsonl").read_text().splitlines()]
    assert [(d["cid"], d["decision"], d["qid"]) for d in decisions] == [
        (_cid(Q1), "labelled", first_qid), (_cid(Q2), "rejected", "abstain-" + _cid(Q2)[2:]),
        (_cid(Q3), "labelled", third_qid)]
    (abst,) = [json.loads(x) for x in
               golden.with_name("abstentions.jsonl").read_text().splitlines()]
    assert (abst["qid"], abst["question"], abst["source"], abst["source_ref"], abst["cid"]) == (
        "abstain-" + _cid(Q2)[2:], Q2, "log", "support.csv:90", _cid(Q2))

    from sweep.data.golden import load_golden

    assert not load_golden(golden).errors

    # A restart of the page (a reload) offers nothing from this queue again.
    driver.get(url)
    _wait(driver, lambda d: "The queue is done" in shown())
