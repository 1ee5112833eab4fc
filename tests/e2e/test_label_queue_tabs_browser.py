"""`sweep label --queue` as a user meets it: two browser tabs on one queue, then a restart.

Five queued log questions. Two tabs of one headless chromium open the page: each is offered a
different question; both label theirs (evidence selected in the document the candidate's
retrieved list links), one rejects its next as not answerable. The server is then stopped
while the other tab holds an unsaved candidate, and started again on the same files: the
reopened page resumes with that candidate, never offers a decided one, and the queue is
finished. At the end every candidate was decided exactly once: one golden line per labelled
cid, one decision line per decision, one abstention.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from test_label_browser import QUOTE_1, SELECT_JS, _wait

from helpers import DEMO, running_label_server

pytestmark = pytest.mark.slow

QUESTIONS = ["can i get my money back for a toaster", "how long do refunds take",
             "do you refund the shipping", "what is the capital of mongolia",
             "can i return an opened kettle"]
RETURNS = "returns/refund-policy"


def _cid(question: str) -> str:
    return "c-" + hashlib.sha256(question.encode()).hexdigest()[:12]


def _queue() -> list[dict]:
    return [{"cid": _cid(q), "question": q, "count": 5 - i, "source": "log",
             "source_ref": f"support.csv:{i + 2}", "reason": f"asked {5 - i} times",
             "priority": i + 1, "feedback": None, "negative_count": 0, "trace_id": None,
             "variants": [], "first_seen": None, "last_seen": None,
             "retrieved": [{"doc_id": RETURNS, "text": "Returns and refunds"}],
             "passage": None} for i, q in enumerate(QUESTIONS)]


def _server_args(work: Path, tmp_path: Path) -> list[str]:
    return ["--corpus", str(work / "corpus"), "--golden", str(work / "golden.jsonl"),
            "--queue", str(work / "queue.jsonl"), "--target", "65", "--no-dense",
            "tracking=off", f"cache.dir={tmp_path}/cache"]


def test_two_tabs_then_a_restart_lose_nothing_and_write_nothing_twice(
        browser: object, tmp_path: Path) -> None:
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    work = tmp_path / "demo"
    shutil.copytree(DEMO / "corpus", work / "corpus")
    for name in ("golden.jsonl", "golden.reference.yaml"):
        shutil.copy(DEMO / name, work / name)
    (work / "queue.jsonl").write_text("".join(json.dumps(c) + "\n" for c in _queue()))
    golden = work / "golden.jsonl"
    before = golden.read_bytes()
    driver = browser

    def shown_question() -> str | None:
        try:
            text = driver.find_element(By.CSS_SELECTOR, "#queue-candidate .q-question").text
            value = driver.find_element(By.ID, "question").get_attribute("value")
        except (StaleElementReferenceException, NoSuchElementException):
            return None
        return text if text and text == value else None

    def wait_question() -> str:
        return _wait(driver, lambda d: shown_question())

    def counter() -> str:
        return driver.find_element(By.ID, "queue-counter").text

    def label_current(n_saved: Callable[[], int]) -> str:
        """Open the candidate's retrieved document, select the quote, save; the saved qid."""
        before_n, question = n_saved(), shown_question()
        assert question is not None
        driver.find_element(By.CSS_SELECTOR, "#queue-candidate a.open").click()
        _wait(driver, lambda d: d.find_elements(
            By.CSS_SELECTOR, f'#doc-view .doc-text.full[data-doc="{RETURNS}"]'))
        assert driver.execute_script(SELECT_JS, QUOTE_1) == QUOTE_1
        button = driver.find_element(By.ID, "add-evidence")
        _wait(driver, lambda d: button.is_enabled())
        button.click()
        _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR,
                                                    "#evidence-list li.evidence")) == 1)
        driver.find_element(By.ID, "save").click()
        try:
            _wait(driver, lambda d: n_saved() == before_n + 1)
        except Exception:
            raise AssertionError("not saved; the page says: "
                                 + driver.find_element(By.ID, "status").text) from None
        _wait(driver, lambda d: shown_question() != question)  # the next claim is shown
        return json.loads(golden.read_text().splitlines()[-1])["qid"]

    def n_saved() -> int:
        return len(golden.read_bytes()[len(before):].splitlines())

    with running_label_server(_server_args(work, tmp_path), tmp_path) as url:
        driver.get(url)
        tab_a = driver.current_window_handle
        first_a = wait_question()
        driver.switch_to.new_window("tab")
        tab_b = driver.current_window_handle
        driver.get(url)
        first_b = wait_question()
        # two tabs, two different questions: the first two of the queue
        assert {first_a, first_b} == set(QUESTIONS[:2])
        assert "1 held by other tabs" in counter()

        label_current(n_saved)  # tab B saves first
        second_b = wait_question()  # and is offered the next free one
        assert second_b == QUESTIONS[2]
        driver.switch_to.window(tab_a)
        assert shown_question() == first_a  # tab A still holds its own
        label_current(n_saved)
        third_a = wait_question()
        assert third_a == QUESTIONS[3]  # not tab B's held QUESTIONS[2]
        assert driver.find_element(By.ID, "queue-why").get_attribute("value") == "unanswerable"
        driver.find_element(By.ID, "queue-reject").click()
        _wait(driver, lambda d: shown_question() == QUESTIONS[4])
        # tab B still holds QUESTIONS[2], unsaved, when the server stops

    assert n_saved() == 2
    with running_label_server(_server_args(work, tmp_path), tmp_path) as url:
        # the reopened page (a new server: claims are gone) resumes in queue order with what
        # was not decided; the labelled and the rejected ones are not offered
        driver.switch_to.window(tab_b)
        driver.get(url)
        assert wait_question() == QUESTIONS[2]
        assert "2 labelled, 1 rejected, 2 left" in counter()
        driver.switch_to.window(tab_a)
        driver.get(url)
        assert wait_question() == QUESTIONS[4]
        label_current(n_saved)
        _wait(driver, lambda d: "The queue is done" in d.find_element(
            By.ID, "queue-candidate").text or shown_question() is not None)
        # tab A has nothing left but tab B's held candidate: it is not offered to tab A
        assert shown_question() is None
        driver.switch_to.window(tab_b)
        assert shown_question() == QUESTIONS[2]
        label_current(n_saved)
        _wait(driver, lambda d: "The queue is done" in d.find_element(
            By.ID, "queue-candidate").text)
        assert "4 labelled, 1 rejected, 0 left" in counter()
        driver.get(url)  # a reload after the end offers nothing
        _wait(driver, lambda d: "The queue is done" in d.find_element(
            By.ID, "queue-candidate").text)

    new = [json.loads(x) for x in golden.read_bytes()[len(before):].decode().splitlines()]
    labelled = [QUESTIONS[i] for i in (0, 1, 2, 4)]
    assert sorted(n["cid"] for n in new) == sorted(_cid(q) for q in labelled)  # once each
    assert all(n["source"] == "log" and n["evidence"][0]["quote"] == QUOTE_1 for n in new)
    assert len({n["qid"] for n in new}) == 4
    decisions = [json.loads(x) for x in
                 (work / "queue.decisions.jsonl").read_text().splitlines()]
    assert sorted((d["cid"], d["decision"]) for d in decisions) == sorted(
        [(_cid(q), "labelled") for q in labelled] + [(_cid(QUESTIONS[3]), "rejected")])
    (abst,) = [json.loads(x) for x in (work / "abstentions.jsonl").read_text().splitlines()]
    assert abst["question"] == QUESTIONS[3] and abst["cid"] == _cid(QUESTIONS[3])

    from sweep.data.golden import load_golden

    assert not load_golden(golden).errors
