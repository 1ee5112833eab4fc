"""synthetic_smell on hand-counted questions and passages."""

from __future__ import annotations

import pytest

from sweep.evaluation.smell import content_words, mean_smell, synthetic_smell


def test_content_words_drop_stop_words_and_case():
    assert content_words("How do I Reset the ROUTER?") == {"reset", "router"}


def test_every_word_borrowed_reads_one():
    # question words {reset, router, button}; all three occur in the passage
    assert synthetic_smell("How do I reset the router button?",
                           ["Press the reset button on the router for ten seconds."]) == 1.0


def test_user_words_read_low():
    # {wifi, keeps, dropping, fix}: only "wifi" occurs in the passage -> 1/4
    assert synthetic_smell("wifi keeps dropping, how to fix",
                           ["If the wifi signal is weak, move the router."]) == pytest.approx(0.25)


def test_words_counted_once_and_evidence_pooled():
    # {refund, refund, days} -> {refund, days}; "refund" in the first passage, "days" in the
    # second: pooled evidence holds both
    assert synthetic_smell("refund refund days", ["A refund is paid.", "Within 30 days."]) == 1.0
    # no stemming: "refunds" is not "refund"
    assert synthetic_smell("refunds", ["A refund is paid."]) == 0.0


def test_undefined_when_nothing_to_compare():
    assert synthetic_smell("how is it?", ["anything"]) is None
    assert synthetic_smell("reset router", []) is None
    assert synthetic_smell("reset router", [""]) is None


def test_mean_leaves_undefined_out():
    assert mean_smell([1.0, None, 0.5]) == (0.75, 2)
    assert mean_smell([None]) == (None, 0)
