"""`sweep golden rebase` on hostile edits (issue 44): a diff with a deadline and a size policy,
and proposals that lack the item's answer_must_mention.

Before: a 400 kB document rewritten end to end ran the word diff for minutes (no deadline);
a passage deleted in the new version was proposed as ``edited`` onto an unrelated passage, and
an edited passage re-anchored to a sentence without its "365 day", both while the tool itself
recorded the mention as missing. The bounds are checked with small limits set here, never by
timing."""

from __future__ import annotations

import json
import random

from sweep.data.corpus import Document, parse_document
from sweep.data.golden import parse_golden_lines
from sweep.evaluation.rebase import (
    DELETE,
    EQUAL,
    INSERT,
    DiffLimits,
    DocDiff,
    Rebaser,
    rebase_items,
    text_diff,
)


def doc(text: str, path: str = "p.md") -> Document:
    return parse_document(path, text)


def rebase_one(old: str, new: str, quotes: list[str], mentions: list[str] | None = None,
               limits: DiffLimits | None = None):
    line = {"qid": "q", "question": "?", "evidence": [{"path": "p.md", "quote": q}
                                                     for q in quotes]}
    if mentions:
        line["answer_must_mention"] = mentions
    items, problems = parse_golden_lines(json.dumps(line), "g")
    assert not [p for p in problems if p.severity == "error"], problems
    rebaser = Rebaser([doc(old)], [doc(new)], limits)
    [result] = rebase_items(items, {1: line}, rebaser, None, {})
    return result


# --------------------------------------------------------------------------- must-mention

CANCEL = "You can cancel an order within 48 hours of placing it from your account settings page."
CHANGE = ("You can change the delivery address of an order from your account settings page "
          "before it ships.")
ORDERS = "# Orders\n\nEvery order gets a confirmation e-mail with its number.\n\n"


def test_a_deleted_passage_is_not_edited_onto_an_unrelated_one() -> None:
    old = f"{ORDERS}## Cancelling\n\n{CANCEL}\n\n## Changing\n\n{CHANGE}\n"
    new = f"{ORDERS}## Changing\n\n{CHANGE}\n"
    r = rebase_one(old, new, [CANCEL], ["48 hours"])
    # the passage's own carry still finds the look-alike (it was "edited" onto it before)
    assert r.passages[0].new.text == CHANGE
    assert r.status == "removed" and r.pending
    assert r.reason == ("answer_must_mention '48 hours' is not in the proposed text (its "
                        "passage was deleted)")
    assert r.mentions_missing == ["48 hours"]
    record = r.obj["rebase"]
    assert record["status"] == "removed" and record["mentions_missing"] == ["48 hours"]
    texts = [c["text"] for c in record["candidates"]]
    assert texts[0] == CHANGE and all("48 hours" not in t for t in texts)
    for c in record["candidates"]:  # each candidate is the new text at its offsets
        assert new[c["start"]:c["end"]] == c["text"]


ANNUAL = "Annual plans can be refunded in full for 365 days after the purchase date."
BILLING = "# Billing\n\nMonthly plans renew on the first of each month.\n\n"
REWORDED = ("Annual plans can be refunded in full after the purchase date only if unused. "
            "The refund window for annual plans is 365 days.")


def test_an_edit_re_anchored_to_a_sentence_without_its_mention_is_unplaced() -> None:
    old = f"{BILLING}{ANNUAL} Contact support to start a refund.\n"
    new = f"{BILLING}{REWORDED} Contact support to start a refund.\n"
    r = rebase_one(old, new, [ANNUAL], ["365 day"])
    assert "365 day" not in r.passages[0].new.text  # what the diff re-anchored it to
    assert r.status == "unplaced" and r.pending
    assert r.reason == "answer_must_mention '365 day' is not in the proposed text"
    candidates = r.obj["rebase"]["candidates"]
    # the run of sentences holding the mention is listed first for the reviewer
    assert candidates[0]["holds_mentions"] is True
    assert "365 days" in candidates[0]["text"]
    assert new[candidates[0]["start"]:candidates[0]["end"]] == candidates[0]["text"]
    assert [c["holds_mentions"] for c in candidates[1:]] == [False] * (len(candidates) - 1)


def test_a_kept_mention_leaves_an_edit_as_it_was() -> None:
    old = f"{BILLING}{ANNUAL} Contact support to start a refund.\n"
    kept = ANNUAL.replace("in full", "completely")
    r = rebase_one(old, old.replace(ANNUAL, kept), [ANNUAL], ["365 day"])
    assert r.status == "edited" and r.mentions_missing == []
    assert r.passages[0].new.text == kept
    assert "candidates" not in r.obj["rebase"]


# --------------------------------------------------------------------------- diff limits


def _paragraphs(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
             "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
             "sierra", "tango", "uniform", "victor", "whiskey"]
    return [" ".join(rng.choice(words) for _ in range(25)) + "." for _ in range(n)]


def _replays(diffs: list[tuple[int, str]], old: str, new: str) -> bool:
    return ("".join(t for op, t in diffs if op != INSERT) == old
            and "".join(t for op, t in diffs if op != DELETE) == new)


def test_a_block_over_the_size_limit_is_not_diffed_word_by_word() -> None:
    old = " ".join(_paragraphs(1, 12))  # one line: the line diff leaves one changed block
    new = " ".join(_paragraphs(2, 12))
    coarse: list[tuple[int, int]] = []
    diffs = text_diff(old, new, DiffLimits(max_tokens=200), coarse)
    assert _replays(diffs, old, new)
    assert coarse == [(0, len(old))]
    assert [op for op, _ in diffs] == [DELETE, INSERT]
    # without the limit the same block is diffed word by word (many equal runs)
    full = text_diff(old, new)
    assert _replays(full, old, new) and sum(op == EQUAL for op, _ in full) > 1


def test_past_the_size_limit_passages_go_to_the_quote_search_or_are_unplaced() -> None:
    paras = _paragraphs(3, 10)
    kept = paras[4]
    lost = paras[6]
    old = "# Doc\n\n" + "\n\n".join(paras) + "\n"
    # rewritten: every paragraph replaced but one, which moved to the end
    fresh = _paragraphs(4, 9)
    new = "# Doc\n\n" + "\n\n".join(fresh) + "\n\n" + kept + "\n"
    r = rebase_one(old, new, [kept, lost], limits=DiffLimits(max_tokens=100))
    moved, unplaced = r.passages
    assert moved.status == "moved" and moved.new.text == kept
    assert unplaced.status == "unplaced" and unplaced.new is None
    assert unplaced.reason == ("p.md: its changed block is over the diff's size limit, and the "
                               "quote search did not find the passage")
    assert r.status == "unplaced" and r.pending
    assert len(r.obj["rebase"]["candidates"]) == 3  # the nearest, for the reviewer
    # the old evidence is kept for the passage nothing placed
    assert r.obj["evidence"][1]["quote"] == lost
    # with the default limits the same small document is diffed and the passage proposed
    assert rebase_one(old, new, [lost]).passages[0].status != "unplaced"


def test_past_the_deadline_the_document_is_not_diffed() -> None:
    old = "# Doc\n\n" + "\n\n".join(_paragraphs(5, 6)) + "\n"
    new = old.replace("alpha", "omega")
    dd = DocDiff(old, new, DiffLimits(deadline_s=1e-9))  # any diff takes longer
    assert dd.gave_up == "the diff ran past its deadline of 1e-09 s"
    assert dd.coarse == [(0, len(old))]
    assert dd.unresolved(10, 20) == dd.gave_up
    whole = DocDiff(old, new)
    assert whole.gave_up == "" and whole.coarse == []
    assert dd.touched(10, 20) and not whole.touched(0, 5)
