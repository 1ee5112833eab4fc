"""Free-text redaction (common.secret.redact_text): each kind replaced and counted, checksums
keep look-alikes (an invalid card or IBAN, dates, versions) untouched."""

from __future__ import annotations

import pytest

from sweep.common.secret import iban_ok, luhn_ok, redact_text


@pytest.mark.parametrize(("text", "expected", "kind"), [
    ("mail jane.doe+x@example.co.uk now", "mail [email] now", "email"),
    ("card 4111 1111 1111 1111 please", "card [card] please", "card"),
    ("card 5500-0000-0000-0004", "card [card]", "card"),
    ("to GB82 WEST 1234 5698 7654 32 today", "to [iban] today", "iban"),
    ("to DE89370400440532013000", "to [iban]", "iban"),
    ("call +44 20 7946 0958", "call [phone]", "phone"),
    ("call (555) 123-4567", "call [phone]", "phone"),
    ("key sk-proj-abcdefghijklmnop1234567890", "key [key]", "key"),
    ("id AKIAIOSFODNN7EXAMPLE ok", "id [key] ok", "key"),
    ("https://bob:hunter2@db.example.com/x", "https://[key]@db.example.com/x", "key"),
    ("token a3f5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3", "token [key]", "key"),
])
def test_each_kind_is_replaced_and_counted(text: str, expected: str, kind: str) -> None:
    counts: dict[str, int] = {}
    assert redact_text(text, counts) == expected
    assert counts == {kind: 1}


@pytest.mark.parametrize("text", [
    "card 4111 1111 1111 1112 fails Luhn",
    "released 2020-05-01, version 3.17.2, in 1999, costs 1,299.00",
    "what is covid-19 and sars-cov-2",
    "order 123456789 and 555-1234",
    "state-of-the-art-retrieval-augmented-generation-2024 is a phrase",
    "how do I reset my password",
])
def test_look_alikes_are_left_alone(text: str) -> None:
    counts: dict[str, int] = {}
    assert redact_text(text, counts) == text
    assert counts == {}


def test_checksums_by_hand() -> None:
    # 4111 1111 1111 1111: doubled odd positions from the right give 2+1*7... sum 30
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert luhn_ok("79927398713")  # the textbook example
    assert iban_ok("GB82 WEST 1234 5698 7654 32") and not iban_ok("GB82 WEST 1234 5698 7654 33")


def test_several_in_one_text_are_counted_apiece() -> None:
    counts: dict[str, int] = {}
    out = redact_text("a@b.io, c@d.org and 4111111111111111", counts)
    assert out == "[email], [email] and [card]"
    assert counts == {"email": 2, "card": 1}
