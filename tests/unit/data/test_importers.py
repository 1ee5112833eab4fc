"""`sweep import`: SQuAD / BEIR / Chroma data sets -> corpus folder + golden set + report."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from helpers import check_written
from sweep.cli.import_cmd import cmd_import
from sweep.common.errors import SweepError
from sweep.data.corpus import load_corpus, slugify_path
from sweep.data.importers import (
    ImportResult,
    OffsetMap,
    clean_text,
    convert_squad,
    import_beir,
    import_chroma,
    import_squad,
    must_mention,
    place,
    run_import,
    safe_slug,
    write_import,
)

# --------------------------------------------------------------------------- helpers


def write_json(path: Path, obj: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def items_by_qid(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {item["qid"]: item for item in items}


def reasons(report: dict[str, Any]) -> dict[str | None, list[str]]:
    out: dict[str | None, list[str]] = {}
    for entry in report["not_placed"]:
        out.setdefault(entry["qid"], []).append(entry["reason"])
    return out


# --------------------------------------------------------------------------- pure helpers


def test_place_prefers_stated_then_nearest() -> None:
    text = "The cat sat on the mat. The cat ran."
    assert place(text, "cat", 4) == (4, False)
    assert place(text, "cat", 26) == (28, True)  # 28 is 2 away, 4 is 22 away
    assert place(text, "cat", 6) == (4, True)
    assert place(text, "cat", 16) == (4, True)  # a tie goes to the earlier one
    assert place(text, "dog", 4) is None
    assert place(text, "", 0) is None


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        (["Denver Broncos", " denver broncos ", "DENVER BRONCOS"], ["Denver Broncos"]),
        (["Denver Broncos", "the Denver Broncos", "Broncos"], ["Broncos"]),
        (["1990", "in 1990", "1990 to 1995"], ["1990"]),
        (["Paris", "London"], []),
        (["a cat", "the cat"], []),
        ([], []),
    ],
)
def test_must_mention_rule(texts: list[str], expected: list[str]) -> None:
    assert must_mention(texts) == expected


@pytest.mark.parametrize("name", ["Super_Bowl_50", "Apollo 11.5 (mission)", "Ünïcode Straße",
                                  "../../etc/passwd", "..", "日本語", "A" * 200])
def test_safe_slug_is_kept_by_slugify_path(name: str) -> None:
    slug = safe_slug(name)
    assert slug and slugify_path(f"{slug}.txt") == slug
    assert "/" not in slug and not slug.startswith(".") and len(slug) <= 80


def test_offset_map_through_bom_crlf_and_nfc() -> None:
    raw = "\ufeffCafe\u0301\r\nthe target here"
    omap = OffsetMap(raw)
    assert omap.clean == clean_text(raw) == "Café\nthe target here"
    start = raw.index("target")
    assert omap.clean[omap(start):].startswith("target")
    assert OffsetMap("plain")(3) == 3


# --------------------------------------------------------------------------- SQuAD

P0 = "The cat sat on the mat. The cat ran."
P1 = "Dogs bark at night. Dogs sleep by day."


def squad_data() -> dict[str, Any]:
    return {"version": "1.1", "data": [
        {"title": "Test Article", "paragraphs": [
            {"context": P0, "qas": [
                {"id": "exact", "question": "Where did the cat sit?",
                 "answers": [{"text": "mat", "answer_start": P0.index("mat")}]},
                {"id": "off-by-2", "question": "Who ran?",
                 "answers": [{"text": "cat", "answer_start": 26}]},
                {"id": "missing", "question": "Which zebra?",
                 "answers": [{"text": "zebra", "answer_start": 3}]},
            ]},
            {"context": P1, "qas": [
                {"id": "dupes", "question": "Who barks?", "answers": [
                    {"text": "Dogs", "answer_start": 0},
                    {"text": "Dogs", "answer_start": 0},
                    {"text": "Dogs bark", "answer_start": 0},
                ]},
                {"id": "mixed", "question": "When do dogs bark, and sleep?", "answers": [
                    {"text": "at night", "answer_start": P1.index("at night")},
                    {"text": "by day", "answer_start": P1.index("by day")},
                ]},
                {"id": "unanswerable", "question": "Do cats bark?", "answers": []},
            ]},
        ]},
        # COVID-QA style: no title, integer document_id and integer question ids.
        {"paragraphs": [{"document_id": 77, "context": "Viruses replicate.", "qas": [
            {"id": 12, "question": "What replicates?",
             "answers": [{"text": "Viruses", "answer_start": 0}]}]}]},
        {"paragraphs": [{"context": "No title, no id.", "qas": [
            {"id": "n1", "question": "What is missing?",
             "answers": [{"text": "title", "answer_start": 3}]}]}]},
        {"title": "Test Article", "paragraphs": [{"context": "Same title again.", "qas": [
            {"id": "same", "question": "Again?",
             "answers": [{"text": "again", "answer_start": 11}]}]}]},
    ]}


def test_squad_documents_and_ids() -> None:
    result = convert_squad(squad_data(), "squad.json")
    assert result.documents == [
        ("test-article.txt", P0 + "\n\n" + P1),
        ("77.txt", "Viruses replicate."),
        ("article-2.txt", "No title, no id."),
        ("test-article-2.txt", "Same title again."),
    ]
    items = items_by_qid(result.items)
    assert items["12"]["relevant_doc_ids"] == ["77"]
    assert items["n1"]["relevant_doc_ids"] == ["article-2"]
    assert items["same"]["relevant_doc_ids"] == ["test-article-2"]
    assert all(i["relevant_chunk_ids"] == [] for i in result.items)


def test_squad_spans_moved_missing_and_deduped() -> None:
    result = convert_squad(squad_data(), "squad.json")
    text = result.documents[0][1]
    items = items_by_qid(result.items)

    (exact,) = items["exact"]["evidence"]
    assert exact == {"doc_id": "test-article", "start": P0.index("mat"),
                     "end": P0.index("mat") + 3, "quote": "mat"}
    # Stated at 26: the "cat" at 28 (2 away) wins over the one at 4.
    (moved,) = items["off-by-2"]["evidence"]
    assert (moved["start"], moved["end"]) == (28, 31)
    assert [m["shift"] for m in result.report["moved"]] == [2]

    base = len(P0) + 2
    dupes = items["dupes"]
    assert [(e["start"], e["end"]) for e in dupes["evidence"]] == [(base, base + 4),
                                                                   (base, base + 9)]
    assert dupes["answer_must_mention"] == ["Dogs"]
    assert items["mixed"]["answer_must_mention"] == []
    assert items["exact"]["answer_must_mention"] == ["mat"]
    for item in result.items:
        for ev in item["evidence"]:
            doc = dict(result.documents)[f"{ev['doc_id']}.txt"]
            assert doc[ev["start"]:ev["end"]] == ev["quote"]
    assert text[base:base + 4] == "Dogs"

    assert "missing" not in items and "unanswerable" not in items
    why = reasons(result.report)
    assert any("does not occur" in r for r in why["missing"])
    assert "none of its answers could be placed" in why["missing"]
    assert why["unanswerable"] == ["no answers (unanswerable question)"]

    c = result.report["counts"]
    assert (c["documents"], c["questions_read"], c["questions_written"],
            c["questions_dropped"]) == (4, 9, 7, 2)
    assert (c["spans_read"], c["spans_at_offset"], c["spans_moved"], c["spans_not_placed"],
            c["spans_duplicate"], c["spans_written"]) == (11, 9, 1, 1, 1, 9)


def test_squad_offsets_survive_normalisation() -> None:
    context = "Cafe\u0301 au lait.\r\nThe answer is here."
    data = {"data": [{"title": "n", "paragraphs": [{"context": context, "qas": [
        {"id": "q", "question": "What is here?",
         "answers": [{"text": "answer", "answer_start": context.index("answer")}]}]}]}]}
    result = convert_squad(data, "n.json")
    (ev,) = result.items[0]["evidence"]
    text = result.documents[0][1]
    assert text == "Café au lait.\nThe answer is here."
    assert text[ev["start"]:ev["end"]] == "answer"
    assert result.report["counts"]["spans_at_offset"] == 1  # mapped, not re-located


def test_squad_written_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_json(tmp_path / "squad.json", squad_data())
    out = tmp_path / "out"
    assert cmd_import(["squad", str(src), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "questions: 7 written of 9 read" in printed
    assert "1 re-located" in printed and "1 not placed" in printed
    resolved = check_written(out)
    assert {r.item.qid for r in resolved} == {"exact", "off-by-2", "dupes", "mixed", "12",
                                              "n1", "same"}
    report = json.loads((out / "import_report.json").read_text(encoding="utf-8"))
    assert report["format"] == "squad" and report["source"] == str(src)
    assert report["counts"]["spans_moved"] == 1
    assert {(e["qid"], e["text"]) for e in report["not_placed"]} >= {("missing", "zebra")}


def test_out_folder_must_be_empty_unless_forced(tmp_path: Path) -> None:
    src = write_json(tmp_path / "squad.json", squad_data())
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(SweepError, match="not empty"):
        run_import("squad", src, out)
    assert not (out / "golden.jsonl").exists()
    stale = out / "corpus" / "stale.txt"
    stale.parent.mkdir()
    stale.write_text("left over from a previous import", encoding="utf-8")
    run_import("squad", src, out, force=True)
    assert not stale.exists()
    assert (out / "notes.txt").exists()  # only what the importer writes is replaced
    assert len(load_corpus(out / "corpus")) == 4


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ('{"data": [ {"title": "x",, } ]}', r"squad\.json:1:\d+: malformed JSON"),
        ('[1, 2]', r"squad\.json: expected a JSON object with a `data` list"),
        ('{"data": [{"title": "x"}]}', r"squad\.json: data\[0\]: missing `paragraphs`"),
        ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q", "question": "?"}]}]}]}',
         r"squad\.json: data\[0\]\.paragraphs\[0\]\.qas\[0\]: missing `answers`"),
        ('{"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "q", "question": "?", '
         '"answers": [{"text": "c", "answer_start": "0"}]}]}]}]}',
         r"answers\[0\]: `answer_start` must be int"),
    ],
)
def test_squad_malformed(tmp_path: Path, content: str, pattern: str) -> None:
    src = tmp_path / "squad.json"
    src.write_text(content, encoding="utf-8")
    with pytest.raises(SweepError, match=pattern) as info:
        import_squad(src)
    assert "\n" not in str(info.value)


def test_squad_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SweepError, match=r"not found: .*nope\.json"):
        import_squad(tmp_path / "nope.json")


# --------------------------------------------------------------------------- BEIR

D1_TEXT = "Alpha beta. Gamma delta. Gamma again."


def beir_folder(root: Path, *, evidence_name: str | None = "evidence_spans.jsonl") -> Path:
    write_jsonl(root / "corpus.jsonl", [
        {"_id": "d1", "title": "Title One", "text": D1_TEXT},
        {"_id": "d2", "title": "", "text": "Only text here."},
        {"_id": "D 3", "title": "Third", "text": "Three."},
        {"_id": "d4", "title": "", "text": "   "},
    ])
    write_jsonl(root / "queries.jsonl", [
        {"_id": "q1", "text": "gamma?"},
        {"_id": "q2", "text": "only text?"},
        {"_id": "q3", "text": "no positive qrels"},
        {"_id": "q4", "text": "only unknown docs"},
        {"_id": "q5", "text": "third?"},
    ])
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        "q1\td1\t1\nq1\td2\t1\nq2\td2\t2\nq2\tmissing\t1\nq3\td1\t0\nq4\tmissing\t1\n"
        "q5\tD 3\t1\nq9\td1\t1\n", encoding="utf-8")
    if evidence_name:
        g = D1_TEXT.index("Gamma delta.")
        write_jsonl(root / evidence_name, [
            {"query_id": "q1", "doc_id": "d1", "start": g, "end": g + 12, "text": "Gamma delta."},
            {"query_id": "q1", "doc_id": "d1", "start": 27, "end": 32, "text": "Gamma"},
            {"query_id": "q1", "doc_id": "d2", "start": 0, "end": 10, "text": "wrong text"},
            {"query_id": "q3", "doc_id": "d1", "start": 0, "end": 5, "text": "Alpha"},
        ])
    return root


def test_beir_import(tmp_path: Path) -> None:
    result = import_beir(beir_folder(tmp_path / "beir"))
    assert result.report["evidence_auto_detected"] is True
    docs = dict(result.documents)
    assert docs["d1.txt"] == "Title One\n\n" + D1_TEXT
    assert docs["d2.txt"] == "Only text here."
    assert docs["d-3.txt"] == "Third\n\nThree."
    assert "d4.txt" not in docs  # empty: skipped and reported
    assert result.report["renamed_doc_ids"] == {"D 3": "d-3"}

    items = items_by_qid(result.items)
    assert set(items) == {"q1", "q2", "q5"}
    assert items["q1"]["relevant_doc_ids"] == ["d1", "d2"]
    assert items["q2"]["relevant_doc_ids"] == ["d2"]
    assert items["q2"]["evidence"] == [] and items["q5"]["evidence"] == []
    shift = len("Title One\n\n")
    g = D1_TEXT.index("Gamma delta.")
    assert items["q1"]["evidence"] == [
        {"doc_id": "d1", "start": shift + g, "end": shift + g + 12, "quote": "Gamma delta."},
        # stated at 27 (inside the second "Gamma"): the one at 25 is nearer than the one at 12
        {"doc_id": "d1", "start": shift + 25, "end": shift + 30, "quote": "Gamma"},
    ]

    c = result.report["counts"]
    assert (c["documents"], c["questions_read"], c["questions_written"],
            c["queries_without_qrels"], c["questions_dropped"]) == (3, 5, 3, 1, 1)
    assert (c["qrels_read"], c["qrels_positive"], c["qrels_unknown_doc"],
            c["qrels_unknown_query"], c["documents_skipped_empty"]) == (8, 7, 2, 1, 1)
    assert (c["spans_read"], c["spans_at_offset"], c["spans_moved"], c["spans_not_placed"],
            c["spans_written"], c["evidence_outside_split"]) == (3, 1, 1, 1, 2, 1)
    why = reasons(result.report)
    assert "corpus-id 'missing' is not in corpus.jsonl (dropped)" in why["q2"]
    assert why["q4"][-1] == "none of its relevant documents is in the corpus"
    assert any("is not in queries.jsonl" in r for r in why["q9"])
    assert any("does not occur" in r for r in why["q1"])


def test_beir_written_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = beir_folder(tmp_path / "beir")
    out = tmp_path / "out"
    assert cmd_import(["beir", str(src), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "(auto-detected)" in printed
    resolved = {r.item.qid: r for r in check_written(out)}
    assert resolved["q1"].level == "span" and resolved["q2"].level == "doc"


def test_beir_explicit_evidence_and_split(tmp_path: Path) -> None:
    src = beir_folder(tmp_path / "beir", evidence_name=None)
    assert import_beir(src).report["evidence_file"] is None
    ev = write_jsonl(tmp_path / "spans.jsonl", [
        {"query_id": "q2", "doc_id": "d2", "start": 5, "end": 9, "text": "text"}])
    result = import_beir(src, evidence=ev)
    assert result.report["evidence_auto_detected"] is False
    assert items_by_qid(result.items)["q2"]["evidence"] == [
        {"doc_id": "d2", "start": 5, "end": 9, "quote": "text"}]
    with pytest.raises(SweepError, match=r"qrels[/\\]dev\.tsv.*splits present: test"):
        import_beir(src, split="dev")


def test_beir_malformed(tmp_path: Path) -> None:
    src = beir_folder(tmp_path / "beir")
    corpus = src / "corpus.jsonl"
    good = corpus.read_text(encoding="utf-8")
    corpus.write_text(good + '{"_id": "d9", "text": \n', encoding="utf-8")
    with pytest.raises(SweepError, match=r"corpus\.jsonl:5: malformed JSON"):
        import_beir(src)
    corpus.write_text(good + '{"title": "no id", "text": "x"}\n', encoding="utf-8")
    with pytest.raises(SweepError, match=r"corpus\.jsonl:5: missing `_id`"):
        import_beir(src)
    corpus.write_text(good, encoding="utf-8")
    qrels = src / "qrels" / "test.tsv"
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\n", encoding="utf-8")
    with pytest.raises(SweepError, match=r"test\.tsv:2: expected 3 tab-separated columns"):
        import_beir(src)
    qrels.write_text("query-id\tcorpus-id\tscore\nq1\td1\thigh\n", encoding="utf-8")
    with pytest.raises(SweepError, match=r"test\.tsv:2: score must be a number"):
        import_beir(src)
    (src / "queries.jsonl").unlink()
    with pytest.raises(SweepError, match=r"queries\.jsonl"):
        import_beir(src)


# --------------------------------------------------------------------------- Chroma

DOC_A = "# Heading\n\nFirst sentence here. Second sentence here. First sentence here.\n"
DOC_B = "\ufeffCafe\u0301 talk.\nTarget line.\n"  # BOM and NFD, as Python reads the file


def chroma_folder(root: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    (root / "corpora").mkdir(parents=True, exist_ok=True)
    (root / "corpora" / "doc_a.md").write_text(DOC_A, encoding="utf-8")
    (root / "corpora" / "Doc B.md").write_bytes(DOC_B.encode("utf-8"))
    (root / "corpora" / "unused.md").write_text("never referenced", encoding="utf-8")
    s = DOC_A.index("Second")
    t = DOC_B.index("Target")
    if rows is None:
        rows = [
            {"question": "What is second?", "corpus_id": "doc_a", "references": [
                {"content": "Second sentence here.", "start_index": s, "end_index": s + 21}]},
            {"question": "What is first (offsets wrong)?", "corpus_id": "doc_a", "references": [
                {"content": "First sentence here.", "start_index": 50, "end_index": 70}]},
            {"question": "What is missing?", "corpus_id": "doc_a", "references": [
                {"content": "Not in the file.", "start_index": 0, "end_index": 16}]},
            {"question": "Which target?", "corpus_id": "Doc B", "references": [
                {"content": "Target line.", "start_index": t, "end_index": t + 12},
                {"content": "Target line.", "start_index": t, "end_index": t + 12}]},
        ]
    with (root / "questions_df.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["question", "references", "corpus_id"])
        for row in rows:
            writer.writerow([row["question"], json.dumps(row["references"]), row["corpus_id"]])
    return root


def test_chroma_import(tmp_path: Path) -> None:
    result = import_chroma(chroma_folder(tmp_path / "chroma"))
    docs = dict(result.documents)
    assert set(docs) == {"doc_a.md", "Doc B.md"}  # only referenced corpora
    assert docs["Doc B.md"] == "Café talk.\nTarget line.\n"
    items = items_by_qid(result.items)
    assert set(items) == {"chroma-1", "chroma-2", "chroma-4"}
    s = DOC_A.index("Second")
    assert items["chroma-1"] == {
        "qid": "chroma-1", "question": "What is second?", "relevant_chunk_ids": [],
        "answer_must_mention": [], "relevant_doc_ids": ["doc_a"],
        "evidence": [{"doc_id": "doc_a", "start": s, "end": s + 21,
                      "quote": "Second sentence here."}],
        "source": "benchmark", "source_ref": str(tmp_path / "chroma")}
    # stated at 50: the second occurrence (54) is nearer than the first (11)
    (ev,) = items["chroma-2"]["evidence"]
    assert (DOC_A.index("First"), ev["start"]) == (11, DOC_A.rindex("First")) == (11, 54)
    # BOM and NFD before the excerpt: mapped (2 characters earlier), not re-located; deduped
    (ev,) = items["chroma-4"]["evidence"]
    assert items["chroma-4"]["relevant_doc_ids"] == ["doc-b"]
    assert docs["Doc B.md"][ev["start"]:ev["end"]] == "Target line."
    assert ev["start"] == DOC_B.index("Target") - 2
    c = result.report["counts"]
    assert (c["documents"], c["questions_read"], c["questions_written"], c["spans_read"],
            c["spans_at_offset"], c["spans_moved"], c["spans_not_placed"],
            c["spans_duplicate"], c["spans_written"]) == (2, 4, 3, 5, 3, 1, 1, 1, 3)
    assert any("references[0]: text at 50:70 of doc_a is not the excerpt" in n
               for n in result.report["notes"])
    assert reasons(result.report)["chroma-3"][-1] == "none of its excerpts could be placed"


def test_chroma_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = import_chroma(chroma_folder(tmp_path / "chroma"))
    write_import(result, out)
    assert sorted(p.name for p in (out / "corpus").iterdir()) == ["Doc B.md", "doc_a.md"]
    check_written(out)


def test_chroma_malformed(tmp_path: Path) -> None:
    src = chroma_folder(tmp_path / "chroma")
    csv_path = src / "questions_df.csv"
    csv_path.write_text('question,references,corpus_id\n"q1","[{""content"": ",doc_a\n',
                        encoding="utf-8")
    with pytest.raises(SweepError, match=r"questions_df\.csv:2: row 1: references: malformed"):
        import_chroma(src)
    csv_path.write_text("question,refs,corpus_id\nq,[],doc_a\n", encoding="utf-8")
    with pytest.raises(SweepError, match=r"questions_df\.csv:1: missing column\(s\) references"):
        import_chroma(src)
    csv_path.write_text('question,references,corpus_id\nq,"[{""content"": ""x""}]",doc_a\n',
                        encoding="utf-8")
    with pytest.raises(SweepError, match=r"questions_df\.csv:2: row 1: references\[0\]: "
                                         r"missing `start_index`"):
        import_chroma(src)
    csv_path.write_text("question,references,corpus_id\nq,[],nowhere\n", encoding="utf-8")
    with pytest.raises(SweepError, match=r"nowhere\.md"):
        import_chroma(src)
    csv_path.write_text("question,references,corpus_id\nq,[],../secret\n", encoding="utf-8")
    with pytest.raises(SweepError, match="not a plain file name"):
        import_chroma(src)


def test_cli_rejects_evidence_for_other_formats(tmp_path: Path) -> None:
    src = write_json(tmp_path / "squad.json", squad_data())
    with pytest.raises(SweepError, match="--evidence is only for the beir format"):
        cmd_import(["squad", str(src), "--out", str(tmp_path / "o"), "--evidence", "x"])
    with pytest.raises(SystemExit):
        cmd_import(["squad", str(src)])  # --out is required


def test_a_format_is_one_registry_entry(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    # Issue 42: the importers were a dict of their own and run_import named beir's options
    # by hand; a format is now an entry of the project's Registry, its options its params.
    from sweep.common.registry import Entry, Registry
    from sweep.data.importers import IMPORTERS
    from sweep.data.importers.common import Report, finish_report, golden_item

    assert isinstance(IMPORTERS, Registry)
    assert IMPORTERS.names() == ("squad", "beir", "chroma")
    assert IMPORTERS.reading("evidence") == ("beir",)
    seen: list[tuple[str, str]] = []

    def import_toy(src: str, *, split: str) -> ImportResult:
        seen.append((src, split))
        text = "Returns are accepted within thirty days of delivery."
        doc_id = slugify_path("toy.md")
        item = golden_item("t1", "How long are returns accepted?", ["thirty days"],
                           [doc_id], [{"doc_id": doc_id, "start": 0, "end": len(text),
                                       "quote": text}])
        rep = Report("toy", src)
        finish_report(rep, [("toy.md", text)], [item])
        return ImportResult("toy", src, [("toy.md", text)], [item], rep.as_dict())

    with IMPORTERS.added(Entry("toy", import_toy, params={"split": "dev"})):
        assert cmd_import(["toy", "SRC", "--out", str(tmp_path / "o"), "--split", "x"]) == 0
        with pytest.raises(SweepError, match="--evidence is only for the beir format"):
            run_import("toy", "SRC", tmp_path / "p", evidence="e.jsonl")
    assert seen == [("SRC", "x")]
    assert load_corpus(tmp_path / "o" / "corpus")[0].text.startswith("Returns are accepted")
    assert "toy" not in IMPORTERS
    with pytest.raises(SweepError, match="unknown import format 'toy'"):
        run_import("toy", "SRC", tmp_path / "q")
