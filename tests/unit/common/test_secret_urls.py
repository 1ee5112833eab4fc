"""URL-shaped settings lose their credentials before they are stored or printed (issue 44):
userinfo and password-like query parameters, through one scrubber (`scrub_urls`) that the
config check, SweepError, report.json, config.yaml and the MLflow params all go through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.common.errors import SweepError
from sweep.common.secret import find_secrets, scrub_tree, scrub_url, scrub_urls
from sweep.common.store import check_url
from sweep.outputs.report import write_config, write_report
from sweep.outputs.tracking import params_of

HOSTILE = [
    # (setting, what must not survive)
    ("postgresql://user@host/db?password=hunter2x", "hunter2x"),
    ("postgresql://host/db?user=bob&password=hunter2x", "hunter2x"),
    ("postgresql://host/db?sslmode=require&sslpassword=hunter2x", "hunter2x"),
    ("https://api.example.com/v1?api_key=hunter2x", "hunter2x"),
    ("https://api.example.com/v1?x=1&access_token=hunter2x#frag", "hunter2x"),
    ("https://api.example.com/v1;secret=hunter2x", "hunter2x"),
    ("http://bob:hunter2x@db/app", "hunter2x"),
    ("https://admin:hunter2x@10.0.0.5/", "hunter2x"),
    ("https://hunter2xtoken@host/v1", "hunter2xtoken"),
]


@pytest.mark.parametrize(("url", "secret"), HOSTILE)
def test_scrub_url_masks_the_secret_and_keeps_the_rest(url: str, secret: str) -> None:
    out = scrub_url(url)
    assert secret not in out and "***" in out
    host = url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1].split("?")[0]
    assert host in out  # where it went still shows


@pytest.mark.parametrize("url", [
    "postgresql://bob@db:5432/app?sslmode=require",
    "http://127.0.0.1:11434/v1",
    "https://docs.python.org/3/library/re.html?highlight=key_word#x",
    "sqlite:////tmp/mlflow.db",
    "https://host/search?keyword=token&q=passwords",
])
def test_scrub_url_leaves_urls_without_credentials(url: str) -> None:
    assert scrub_url(url) == url


@pytest.mark.parametrize(("url", "secret"), HOSTILE)
def test_config_check_refuses_each(url: str, secret: str) -> None:
    found = list(find_secrets({"cache": {"url": url}}))
    assert [k for k, _ in found] == ["cache.url"]
    assert secret not in found[0][1]


@pytest.mark.parametrize(("url", "secret"), HOSTILE)
def test_every_writer_scrubs(tmp_path: Path, url: str, secret: str) -> None:
    text = f"cannot connect to {url} (refused)"
    assert secret not in str(SweepError(text, hint=f"check {url}"))
    write_report(tmp_path, {"endpoint": url, "nested": [{"why": text}]})
    write_config(tmp_path, {"generation": {"base_url": url}})
    stored = (tmp_path / "report.json").read_text() + (tmp_path / "config.yaml").read_text()
    assert secret not in stored and "***" in stored
    params = params_of({"generation": {"base_url": url}, "note": text})
    assert secret not in json.dumps(params)


def test_scrub_tree_and_text_with_several_urls() -> None:
    text = "a postgresql://h/db?user=u&password=p1secret and https://x:p2secret@h/ end"
    assert scrub_urls(text) == ("a postgresql://h/db?user=u&password=*** and "
                                "https://***@h/ end")
    assert scrub_tree({"a": [text, 3, None]}) == {"a": [scrub_urls(text), 3, None]}


def test_cache_url_with_a_query_password_is_refused_without_echoing_it() -> None:
    with pytest.raises(SweepError) as err:
        check_url("postgresql://bob@db/app?password=hunter2x")
    assert "hunter2x" not in str(err.value) and "?password=" in str(err.value)
    check_url("postgresql://bob@db/app?sslmode=require")  # no password: fine


def test_log_records_are_scrubbed_before_any_handler(tmp_path: Path) -> None:
    import logging

    from sweep.common.secret import install_log_scrubber

    before = logging.getLogRecordFactory()
    try:
        install_log_scrubber()
        install_log_scrubber()  # idempotent: one layer
        log_file = tmp_path / "job.log"
        handler = logging.FileHandler(log_file)
        logger = logging.getLogger("sweep.test_scrubber")
        logger.addHandler(handler)
        logger.propagate = False
        logger.warning("store %s failed: %s", "https://u:hunter2x@mlflow/", "ok")
        logger.warning("psycopg: %s", "postgresql://h/db?password=hunter2x")
        logger.warning("plain %d%%", 5)
        handler.close()
        text = log_file.read_text()
        assert "hunter2x" not in text
        assert "store https://***@mlflow/ failed: ok" in text and "plain 5%" in text
    finally:
        logging.setLogRecordFactory(before)


def test_queue_report_and_exported_winner_are_scrubbed(tmp_path: Path) -> None:
    from sweep.decide.export import winner_yaml
    from sweep.questions.queue import write_report as write_queue_report

    url = "https://u:hunter2x@mlflow.example/?token=hunter2x"
    path = write_queue_report(tmp_path / "q.jsonl", {"sources": [{"path": f"{url} exp"}]})
    assert "hunter2x" not in path.read_text()
    assert "hunter2x" not in winner_yaml({"generation": {"base_url": url}}, ["winner"])
