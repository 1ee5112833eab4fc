"""`sweep golden rebase` and `sweep golden fingerprint` as a user runs them, with git revisions
of a repository the test creates."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from sweep.cli.golden import cmd_golden
from sweep.common.errors import SweepError
from sweep.data.drift import read_record

REFUND = "You can return most products within 30 days of delivery for a full refund."
WARRANTY = "The standard warranty period is two years for devices and one year for accessories."


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    docs = repo / "docs"
    docs.mkdir(parents=True)
    git(repo, "init", "-q")
    (docs / "policy.md").write_text(f"# Policy\n\n{REFUND}\n\n## Warranty\n\n{WARRANTY}\n")
    (docs / "faq.md").write_text("# FAQ\n\nShipping takes three to five working days.\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "v1")
    # v2 (the working tree, uncommitted): a paragraph inserted, a file renamed and edited.
    (docs / "policy.md").write_text(f"# Policy\n\nRead this first.\n\n{REFUND}\n\n## Warranty\n\n"
                                    f"{WARRANTY}\n")
    git(repo, "mv", "docs/faq.md", "docs/questions.md")
    (docs / "questions.md").write_text("# FAQ\n\nShipping takes two to four working days.\n")
    return repo


def golden_file(tmp_path: Path) -> Path:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(x) for x in [
        {"qid": "q1", "question": "refund window?", "evidence": [{"path": "policy.md",
                                                                    "quote": REFUND}]},
        {"qid": "q2", "question": "how long is shipping?", "answer_must_mention": ["five"],
         "evidence": [{"path": "faq.md", "quote": "Shipping takes three to five working days."}]},
        {"qid": "q3", "question": "warranty?", "evidence": [{"path": "policy.md",
                                                               "quote": WARRANTY}]},
    ]) + "\n")
    return golden


def test_rebase_from_a_git_revision_onto_the_working_tree(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "golden.jsonl"
    said: list[str] = []
    cmd_golden(["rebase", "--golden", str(golden_file(tmp_path)), "--old", "HEAD",
                "--corpus", str(repo / "docs"), "--out", str(out),
                f"cache.dir={tmp_path}/cache"], say=said.append)
    report = json.loads((out.parent / "rebase_report.json").read_text())
    assert report["summary"]["items"] == {"unchanged": 0, "moved": 2, "edited": 0, "removed": 0,
                                          "unplaced": 1}
    assert report["summary"]["documents"]["renamed"] == [
        {"old": "faq.md", "new": "questions.md", "similarity": pytest.approx(0.67, abs=0.2)}]
    assert report["old"].startswith("HEAD (") and report["new"] == str(repo / "docs")
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    new_policy = (repo / "docs" / "policy.md").read_text()
    assert lines[0]["evidence"] == [{"path": "policy.md", "quote": REFUND}]
    assert lines[0]["rebase"]["status"] == "moved"
    assert lines[0]["rebase"]["passages"][0]["new"]["start"] == new_policy.index(REFUND)
    assert lines[1]["rebase"]["status"] == "unplaced"  # its mention "five" is gone
    assert lines[1]["rebase"]["mentions_missing"] == ["five"]
    assert lines[1]["evidence"] == [{"path": "questions.md",
                                     "quote": "Shipping takes two to four working days."}]
    queue = [json.loads(x) for x in (out.parent / "golden.review.jsonl").read_text().splitlines()]
    assert [q["qid"] for q in queue] == ["q2"]
    assert set(read_record(out)["documents"]) == {"policy.md", "questions.md"}
    assert any(s.startswith("items:    unchanged 0  moved 2  edited 0  removed 0  unplaced 1")
               for s in said)
    assert any("review: sweep label --review" in s for s in said)


def test_two_revisions_and_nothing_is_overwritten(repo: Path, tmp_path: Path) -> None:
    git(repo, "commit", "-q", "-am", "v2")
    golden = golden_file(tmp_path)
    out = tmp_path / "g2.jsonl"
    args = ["rebase", "--golden", str(golden), "--old", "HEAD~1", "--new", "HEAD",
            "--corpus", str(repo / "docs"), "--out", str(out), f"cache.dir={tmp_path}/c"]
    cmd_golden(args, say=lambda _: None)
    with pytest.raises(SweepError, match=r"g2\.jsonl exists"):
        cmd_golden(args, say=lambda _: None)
    with pytest.raises(SweepError, match="--new: name the new corpus"):
        cmd_golden(["rebase", "--golden", str(golden), "--old", str(repo / "docs"), "--out",
                    str(tmp_path / "g3.jsonl")], say=lambda _: None)
    with pytest.raises(SweepError, match="is the golden file itself"):
        cmd_golden([*args[:-2], str(golden), args[-1]], say=lambda _: None)


def test_fingerprint_refuses_to_hide_a_moved_corpus(repo: Path, tmp_path: Path) -> None:
    golden = golden_file(tmp_path)
    old = tmp_path / "v1"
    subprocess.run(f"git -C {repo} archive HEAD docs | tar -x -C {tmp_path} && mv "
                   f"{tmp_path}/docs {old}", shell=True, check=True)
    cmd_golden(["fingerprint", "--golden", str(golden), "--corpus", str(old)],
               say=lambda _: None)
    assert set(read_record(golden)["documents"]) == {"faq.md", "policy.md"}
    with pytest.raises(SweepError, match="2 documents changed since these labels were made"):
        cmd_golden(["fingerprint", "--golden", str(golden), "--corpus", str(repo / "docs")],
                   say=lambda _: None)


def test_validate_warns_of_drift_and_pending_items(repo: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from sweep.cli.validate import cmd_validate

    out = tmp_path / "g2.jsonl"
    cmd_golden(["rebase", "--golden", str(golden_file(tmp_path)), "--old", "HEAD",
                "--corpus", str(repo / "docs"), "--out", str(out), f"cache.dir={tmp_path}/c"],
               say=lambda _: None)
    args = [f"corpus.path={repo / 'docs'}", f"golden.path={out}", "tracking=off",
            f"cache.dir={tmp_path}/c"]
    assert cmd_validate(args) == 0
    err = capsys.readouterr().err
    assert "warning: 1 items await review after a rebase and are not scored" in err
    assert "changed since these labels were made" not in err
    (repo / "docs" / "policy.md").write_text("# Policy\n\nRewritten entirely.\n")
    from sweep.pipeline.memo import clear_memo

    clear_memo()  # one process, one corpus: the next command would be a new process
    assert cmd_validate(args) == 1  # the moved quotes are gone: errors, as always
    err = capsys.readouterr().err
    assert "warning: 1 document changed since these labels were made (1 edited;" in err


def test_an_html_corpus_is_rebased_through_the_parsers_text(tmp_path: Path) -> None:
    from sweep.data.corpus import load_corpus

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    page = ("<html><head><title>Help</title></head><body><main><h1>Returns</h1>"
            "<p>{intro}</p><p>{refund}</p></main></body></html>")
    (old / "help.html").write_text(page.format(intro="Read this.", refund=REFUND))
    (new / "help.html").write_text(page.format(intro="Read this page before anything else.",
                                               refund=REFUND))
    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps({"qid": "q1", "question": "refund window?", "evidence": [
        {"path": "help.html", "quote": REFUND}]}) + "\n")
    out = tmp_path / "g2.jsonl"
    cmd_golden(["rebase", "--golden", str(golden), "--old", str(old), "--new", str(new),
                "--out", str(out), f"cache.dir={tmp_path}/c"], say=lambda _: None)
    line = json.loads(out.read_text())
    [passage] = line["rebase"]["passages"]
    assert passage["status"] == "moved"
    parsed = next(d for d in load_corpus(new) if d.source == "help.html")
    assert parsed.parser  # read by an HTML parser, not as markup
    assert parsed.text[passage["new"]["start"]:passage["new"]["end"]] == REFUND
    assert "<p>" not in parsed.text


def test_a_set_still_under_review_is_not_rebased_again(repo: Path, tmp_path: Path) -> None:
    out = tmp_path / "g2.jsonl"
    cmd_golden(["rebase", "--golden", str(golden_file(tmp_path)), "--old", "HEAD",
                "--corpus", str(repo / "docs"), "--out", str(out), f"cache.dir={tmp_path}/c"],
               say=lambda _: None)
    with pytest.raises(SweepError, match="1 items still await review from an earlier rebase"):
        cmd_golden(["rebase", "--golden", str(out), "--old", str(repo / "docs"),
                    "--corpus", str(repo / "docs"), "--out", str(tmp_path / "g3.jsonl")],
                   say=lambda _: None)


@pytest.mark.parametrize("parser", ["pdfplumber", "pypdf"])
def test_a_pdf_corpus_is_rebased_through_each_parsers_text(tmp_path: Path, parser: str) -> None:
    from pdfgen import make_pdf
    from sweep.data.corpus import load_corpus

    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    title = (18.0, True, "Returns")
    (old / "guide.pdf").write_bytes(make_pdf([[title, (11.0, False, REFUND)]]))
    (new / "guide.pdf").write_bytes(make_pdf([[title, (11.0, False, "Read this first."),
                                               (11.0, False, REFUND)]]))
    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps({"qid": "q1", "question": "refund window?", "evidence": [
        {"path": "guide.pdf", "quote": REFUND}]}) + "\n")
    out = tmp_path / "g2.jsonl"
    cmd_golden(["rebase", "--golden", str(golden), "--old", str(old), "--new", str(new),
                "--out", str(out), f"corpus.pdf_parser={parser}", f"cache.dir={tmp_path}/c"],
               say=lambda _: None)
    [passage] = json.loads(out.read_text())["rebase"]["passages"]
    assert passage["status"] == "moved"
    [doc] = load_corpus(new, parsers={"pdf": parser})
    assert doc.parser == parser
    assert doc.text[passage["new"]["start"]:passage["new"]["end"]] == REFUND
