"""The one rule for secret-looking config keys and URLs with credentials (issue 14, item 2)."""

from __future__ import annotations

import pytest

from sweep.common.secret import find_secrets, is_secret_key, scrub, url_has_userinfo


@pytest.mark.parametrize("key", [
    "generation.api_key", "judge.apikey", "x.token", "y.hf_token", "generation.access_token",
    "z.secret", "a.client_secret", "b.password", "c.db_passwd", "d.credentials",
    "e.credential", "f.private_key", "g.key", "api_key", "GENERATION.API_KEY", "h.api-key",
    "i.secret_key",
])
def test_secret_looking_keys_are_recognised(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", [
    "generation.api_key_env", "judge.api_key_env", "x.token_env", "chunk.tokenizer",
    "generation.max_tokens", "eval.token_budget", "eval.k", "rerank.pool", "keyword",
    "monkey", "corpus.keys_file", "tracking.experiment", "x.tokens",
])
def test_ordinary_keys_are_not_secrets(key: str) -> None:
    assert not is_secret_key(key)


@pytest.mark.parametrize("url,has", [
    ("http://user:sk-abc@host/v1", True),
    ("https://sk-abc@host/v1", True),
    ("HTTPS://u:p@host:8080", True),
    ("http://127.0.0.1:11434/v1", False),
    ("sqlite:////tmp/a@b/mlflow.db", False),
    ("https://host/v1?x=a@b", False),
    ("plain text with a@b", False),
])
def test_userinfo_in_urls(url: str, has: bool) -> None:
    assert url_has_userinfo(url) is has


def test_find_secrets_walks_every_section_and_lists() -> None:
    cfg = {"generation": {"api_key_env": "OPENAI_API_KEY", "base_url": "http://a:b@h/v1",
                          "max_tokens": 256},
           "chunk": {"tokenizer": "minilm"},
           "extra": {"nested": {"password": "hunter2"}, "urls": ["https://t0k@h"]}}
    found = dict(find_secrets(cfg))
    assert set(found) == {"generation.base_url", "extra.nested.password", "extra.urls.0"}
    # The message never repeats the value.
    assert all("hunter2" not in why and "t0k" not in why for why in found.values())


def test_scrub_replaces_every_occurrence_but_not_short_values() -> None:
    assert scrub("Bearer sk-123456 and sk-123456", "sk-123456") == "Bearer *** and ***"
    assert scrub("abc", "") == "abc"
    assert scrub("a b c", "a") == "a b c"  # a 1-char "key" would mangle every text
