"""Long stages are never silent (issue 30, "long silences"): a bar on a terminal, a line every
EVERY_S seconds in a log, nothing for a quick stage, and no bar ever written into a log."""

from __future__ import annotations

import io
import logging
import re
import time
from pathlib import Path

import numpy as np
import pytest

from sweep.common.progress import Progress
from sweep.data import corpus as corpus_mod
from sweep.embedding.models import encode_by_batch


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def fast_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHUNK_SWEEP_PROGRESS", raising=False)
    monkeypatch.setenv("CHUNK_SWEEP_PROGRESS_EVERY_S", "0.05")


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "sweep.progress"]


def test_a_counted_stage_in_a_log_says_how_far_it_is(fast_lines: None,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    with caplog.at_level(logging.INFO, "sweep.progress"), \
            Progress("embed m", total=40, unit="texts") as p:
        for _ in range(4):
            time.sleep(0.15)
            p.update(10, note="doc.md")
    lines = _lines(caplog)
    assert lines, "no progress line in 0.6 s with a line every 0.05 s"
    done = []
    for line in lines:
        m = re.fullmatch(r"embed m: (\d+) of 40 texts \((\d+)%\), \d+ s(?: \(now: doc\.md\))?",
                         line)
        assert m, line
        assert int(m[2]) == round(100 * int(m[1]) / 40)
        done.append(int(m[1]))
    assert done == sorted(done) and done[-1] <= 40
    assert err.getvalue() == ""  # no bar redraws in a log


def test_a_stage_that_cannot_count_still_says_it_runs(fast_lines: None,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, "sweep.progress"), Progress("parse big.pdf", bar=False):
        time.sleep(0.3)
    assert _lines(caplog) and all(re.fullmatch(r"parse big\.pdf: still running, \d+ s", x)
                                  for x in _lines(caplog))


def test_a_quick_stage_prints_nothing(monkeypatch: pytest.MonkeyPatch,
                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("CHUNK_SWEEP_PROGRESS_EVERY_S", raising=False)  # 30 s
    with caplog.at_level(logging.INFO, "sweep.progress"), Progress("quick", total=3) as p:
        p.update(3)
    assert _lines(caplog) == []


def test_on_a_terminal_a_bar_and_no_lines(fast_lines: None, monkeypatch: pytest.MonkeyPatch,
                                          caplog: pytest.LogCaptureFixture) -> None:
    tty = _Tty()
    monkeypatch.setattr("sys.stderr", tty)
    with caplog.at_level(logging.INFO, "sweep.progress"), \
            Progress("embed m", total=5, unit="texts") as p:
        for _ in range(5):
            time.sleep(0.05)
            p.update(1)
    assert re.search(r"embed m: +\d+%\|.*\| [1-5]/5 \[", tty.getvalue())
    assert _lines(caplog) == []


class _SlowModel:
    def encode(self, texts: list[str], **_: object) -> np.ndarray:
        time.sleep(0.08)
        return np.ones((len(texts), 2), dtype=np.float32)


def test_local_embedding_in_a_log_has_lines(fast_lines: None, monkeypatch: pytest.MonkeyPatch,
                                            caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr("sys.stderr", io.StringIO())
    texts = [f"t{i}" for i in range(40)]
    with caplog.at_level(logging.INFO, "sweep.progress"):
        out = encode_by_batch(_SlowModel(), texts, 4, True, desc="embed minilm")
    assert out.shape == (40, 2)
    assert any(re.match(r"embed minilm: \d+ of 40 texts", x) for x in _lines(caplog))


def test_parsing_names_the_file_it_is_on(fast_lines: None, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    for name in ("a.md", "b.md", "c.md"):
        (tmp_path / name).write_text(f"# {name}\n\ntext\n")
    real = corpus_mod.read_regular

    def slow(path: Path, shown: str) -> bytes:
        time.sleep(0.2 if path.name == "b.md" else 0)
        return real(path, shown)

    monkeypatch.setattr(corpus_mod, "read_regular", slow)
    with caplog.at_level(logging.INFO, "sweep.progress"):
        docs = corpus_mod.load_corpus(tmp_path)
    assert len(docs) == 3
    assert "parse corpus: 1 of 3 files (33%), 0 s (now: b.md)" in _lines(caplog)
