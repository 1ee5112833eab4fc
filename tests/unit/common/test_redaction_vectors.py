"""The redaction table (issue 44): per kind, strings that must be replaced and look-alikes that
must not. docs/security.md lists the same kinds; benchmarks/redaction_precision.py measures how
often each fires on the shared corpora."""

from __future__ import annotations

import pytest

from sweep.common.secret import iban_ok, redact_text

# (kind, text with the secret or personal datum, the text it becomes)
POSITIVES = [
    # URL credentials, whatever the host's length
    ("key", "connect scheme://bob:pw@db/app now", "connect scheme://[key]@db/app now"),
    ("key", "try https://admin:pw@10.0.0.5/", "try https://[key]@10.0.0.5/"),
    ("key", "postgresql://u@h/db?sslmode=require&password=hunter2",
     "postgresql://u@h/db?sslmode=require&password=[key]"),
    ("key", "jdbc:postgresql://h/db?user=bob&password=s3cret", None),
    ("key", "https://api.example.com/v1?api_key=abc123def", None),
    # cloud secret keys with / and + (an AWS secret access key: 40 characters of base64)
    ("key", "secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok", "secret [key] ok"),
    ("key", "it is Zx9+Ab3/Qr7sT1uV2wX3yZ4aB5cD6eF7gH8iJ9kL", "it is [key]"),
    ("key", "aws_secret_access_key = q8Wz3n+5/Tr0YbXcV1mKp", "aws_secret_access_key = [key]"),
    # JWTs and provider prefixes
    ("key", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0",
     "[key]"),
    ("key", "key sk-proj-abcdefghijklmnop1234567890", "key [key]"),
    ("key", "stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe [key]"),
    ("key", "gh ghp_16C7e42F292c6912E7710c838347Ae178B4a now", "gh [key] now"),
    ("key", "glpat-xxxxyyyyzzzz12345678 leaked", "[key] leaked"),
    ("key", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567", "[key]"),
    ("key", "id AKIAIOSFODNN7EXAMPLE ok", "id [key] ok"),
    ("key", "slack xoxb-123456789012-abcdefghij", "slack [key]"),
    # private-key blocks, closed or cut off
    ("key", "-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEAx -----END RSA PRIVATE KEY----- ok",
     "[key] ok"),
    ("key", "pasted -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAA", "pasted [key]"),
    ("key", "my password=Hunter2x fails", "my password=[key] fails"),
    # e-mail
    ("email", "mail jane.doe+x@example.co.uk now", "mail [email] now"),
    # phones in national formats, groups of 4-5 digits, with or without +
    ("phone", "ring 07700 900123 today", "ring [phone] today"),
    ("phone", "office 030 12345678", "office [phone]"),
    ("phone", "mobile +49 1512 3456789", "mobile [phone]"),
    ("phone", "call +44 20 7946 0958", "call [phone]"),
    ("phone", "call (555) 123-4567", "call [phone]"),
    ("phone", "fr 06 12 34 56 78", "fr [phone]"),
    ("phone", "+4915123456789 please", "[phone] please"),
    # IBANs: spaced, lower case, dashed
    ("iban", "to GB82 WEST 1234 5698 7654 32 today", "to [iban] today"),
    ("iban", "to de89370400440532013000", "to [iban]"),
    ("iban", "to DE89-3704-0044-0532-0130-00", "to [iban]"),
    ("iban", "nl91abna0417164300 pls", "[iban] pls"),
    # cards (Luhn)
    ("card", "card 4111 1111 1111 1111 please", "card [card] please"),
    ("card", "card 5500-0000-0000-0004", "card [card]"),
]

# Look-alikes: nothing may change.
NEGATIVES = [
    "released 2020-05-01, version 3.17.2, in 1999, costs 1,299.00",
    "between 2019 2020 2021 and 2014 2014 2014",
    "doi 10.1000/182 and 10.1371/journal.pone.0123456",
    "listen on port 8080, localhost:5432 or 127.0.0.1:11434",
    "error 0x80070005 and errno 10054",
    "ISBN 978-3-16-148410-0",
    "order 123456789 and 555-1234",
    "card 4111 1111 1111 1112 fails Luhn",
    "GB82 WEST 1234 5698 7654 33 fails mod 97",
    "DE89370400440532013001 fails mod 97",
    "what is covid-19 and sars-cov-2",
    "25-hydroxycholecalciferol and phosphatidylinositol-3-OH",
    "state-of-the-art-retrieval-augmented-generation-2024 is a phrase",
    "how do I reset my password",
    "how do I reset my password: please",
    "the password: ******** was masked",
    "https://docs.python.org/3/library/re.html?highlight=sub#re.sub",
    "postgresql://bob@db/app?sslmode=require",
    "a hex dump 00 79 00 00 00 74 00 00 00 68",
    "pi is 0.156641360591757 roughly",
    "src/sweep/common/secret/redaction/vectors.py",
]


@pytest.mark.parametrize(("kind", "text", "expected"), POSITIVES,
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVES)])
def test_positive_is_replaced_and_counted(kind: str, text: str, expected: str | None) -> None:
    counts: dict[str, int] = {}
    out = redact_text(text, counts)
    if expected is not None:
        assert out == expected
    assert f"[{kind}]" in out
    assert counts == {kind: 1}


@pytest.mark.parametrize("text", NEGATIVES)
def test_look_alike_is_left_alone(text: str) -> None:
    counts: dict[str, int] = {}
    assert redact_text(text, counts) == text
    assert counts == {}


def test_found_lists_what_was_replaced() -> None:
    found: list[tuple[str, str]] = []
    redact_text("a@b.io then +49 1512 3456789", found=found)
    assert found == [("email", "a@b.io"), ("phone", "+49 1512 3456789")]


@pytest.mark.parametrize(("iban", "ok"), [
    ("DE89 3704 0044 0532 0130 00", True),
    ("de89-3704-0044-0532-0130-00", True),
    ("DE89 3704 0044 0532 0130 0", False),  # one digit short of Germany's 22
    ("XX89 3704 0044 0532 0130 00", False),  # no such country
    ("NO9386011117947", True),  # Norway: 15, the shortest
])
def test_iban_checks_country_length_and_mod97(iban: str, ok: bool) -> None:
    assert iban_ok(iban) is ok
