"""`sweep.evaluation.rebase`: each status on hand-made edits, checked against the texts themselves."""

from __future__ import annotations

import json
import random

import pytest

from sweep.data.corpus import Document, parse_document
from sweep.data.golden import parse_golden_lines
from sweep.evaluation.rebase import (
    DocDiff,
    Rebaser,
    check_landing,
    match_documents,
    rebase_items,
    summary,
    text_diff,
)

REFUND = "You can return most products within 30 days of delivery for a full refund."
SHIPPING = "Orders over 50 euros ship free of charge to every country in the European Union."
WARRANTY = "The standard warranty period is two years for devices and one year for accessories."
OLD = (f"# Returns\n\nRead this page before you send anything back.\n\n{REFUND}\n\n"
       f"## Shipping\n\n{SHIPPING}\n\n## Warranty\n\n{WARRANTY}\n")


def doc(path: str, text: str) -> Document:
    return parse_document(path, text)


def carry(old_text: str, new_text: str, passage: str, new_path: str = "policy.md",
          others: tuple[Document, ...] = ()):
    old = doc("policy.md", old_text)
    rebaser = Rebaser([old], [doc(new_path, new_text), *others])
    start = old_text.index(passage)
    return rebaser.carry(old, start, start + len(passage))


def test_an_edit_after_the_passage_leaves_it_unchanged() -> None:
    c = carry(OLD, OLD.replace(WARRANTY, "Warranty terms are on the invoice."), REFUND)
    assert c.status == "unchanged"
    assert (c.new.start, c.new.end) == (OLD.index(REFUND), OLD.index(REFUND) + len(REFUND))


def test_an_insertion_before_the_passage_moves_it_onto_the_same_text() -> None:
    inserted = "A new paragraph about gift cards, written later.\n\n"
    new = OLD.replace("Read this page", inserted + "Read this page")
    c = carry(OLD, new, REFUND)
    assert c.status == "moved"
    assert c.new.start == OLD.index(REFUND) + len(inserted)
    assert new[c.new.start:c.new.end] == REFUND == c.new.text


def test_a_rewording_inside_the_passage_is_edited_with_the_new_text_proposed() -> None:
    reworded = "You can return most products within 30 days of delivery and get your money back."
    c = carry(OLD, OLD.replace(REFUND, reworded), REFUND)
    assert c.status == "edited"
    assert c.new.text == reworded
    assert c.old.text == REFUND


def test_a_changed_number_is_unplaced_and_names_the_missing_mention() -> None:
    # Issue 44: a proposal without the item's answer_must_mention is never "edited"
    new = OLD.replace("30 days", "14 days")
    line = json.dumps({"qid": "q1", "question": "how long do i have to return something?",
                       "answer_must_mention": ["30 days"],
                       "evidence": [{"path": "policy.md", "quote": REFUND}]})
    items, problems = parse_golden_lines(line, "g.jsonl")
    assert not problems
    rebaser = Rebaser([doc("policy.md", OLD)], [doc("policy.md", new)])
    [result] = rebase_items(items, {1: json.loads(line)}, rebaser, None, {"at": "now"})
    assert result.status == "unplaced" and result.pending
    assert result.reason == "answer_must_mention '30 days' is not in the proposed text"
    assert result.mentions_missing == ["30 days"]
    assert result.passages[0].new.text == REFUND.replace("30 days", "14 days")
    # no candidate holds "30 days": the nearest by word overlap, the reworded sentence first
    candidates = result.obj["rebase"]["candidates"]
    assert candidates[0]["text"] == REFUND.replace("30 days", "14 days")
    assert not any(c["holds_mentions"] for c in candidates)
    assert result.obj["rebase"]["passages"][0]["old"]["text"] == REFUND


def test_a_deleted_section_is_removed() -> None:
    new = OLD.replace(f"## Shipping\n\n{SHIPPING}\n\n", "")
    c = carry(OLD, new, SHIPPING)
    assert c.status == "removed" and c.new is None


def test_a_renamed_file_is_a_move_not_a_deletion() -> None:
    new = OLD.replace("Read this page", "Please read this page")
    c = carry(OLD, new, WARRANTY, new_path="help/returns-policy.md")
    assert c.status == "moved"
    assert c.new.path == "help/returns-policy.md"
    assert new[c.new.start:c.new.end] == WARRANTY
    matches = match_documents([doc("policy.md", OLD)], [doc("help/returns-policy.md", new)])
    assert matches["policy.md"].how == "content"


def test_a_passage_duplicated_in_the_new_version_follows_the_diff_not_the_first_copy() -> None:
    # The copy is pasted above the original: a quote search would land on the copy; the diff
    # knows the original is the one that stayed.
    new = OLD.replace("Read this page", f"{WARRANTY}\n\nRead this page")
    c = carry(OLD, new, WARRANTY)
    assert c.status == "moved"
    assert new.count(WARRANTY) == 2
    assert c.new.start == new.rindex(WARRANTY)
    line = json.dumps({"qid": "q1", "question": "how long is the warranty?",
                       "evidence": [{"path": "policy.md", "quote": WARRANTY}]})
    items, _ = parse_golden_lines(line, "g")
    new_docs = [doc("policy.md", new)]
    results = rebase_items(items, {1: json.loads(line)}, Rebaser([doc("policy.md", OLD)],
                                                                 new_docs), None, {})
    # Not unique any more: the rewritten evidence carries the offsets, and lands there.
    assert results[0].obj["evidence"] == [{"path": "policy.md", "quote": WARRANTY,
                                           "start": new.rindex(WARRANTY),
                                           "end": new.rindex(WARRANTY) + len(WARRANTY)}]
    check_landing(results, new_docs)
    assert results[0].status == "moved"


def test_a_section_moved_within_the_file_is_found_by_its_exact_text() -> None:
    new = (f"# Returns\n\n## Warranty\n\n{WARRANTY}\n\nRead this page before you send anything "
           f"back.\n\n{REFUND}\n\n## Shipping\n\n{SHIPPING}\n")
    c = carry(OLD, new, WARRANTY)
    assert c.status == "moved"
    assert new[c.new.start:c.new.end] == WARRANTY


def test_a_passage_moved_to_another_file_is_found_there() -> None:
    new = OLD.replace(f"## Warranty\n\n{WARRANTY}\n", "")
    other = doc("warranty.md", f"# Warranty\n\n{WARRANTY}\n")
    c = carry(OLD, new, WARRANTY, others=(other,))
    assert c.status == "moved"
    assert c.new.path == "warranty.md" and other.text[c.new.start:c.new.end] == WARRANTY


def test_the_same_words_rewrapped_are_sent_to_review_not_moved() -> None:
    rewrapped = WARRANTY.replace("is two years ", "is two years\n")
    c = carry(OLD, OLD.replace(WARRANTY, rewrapped), WARRANTY)
    assert c.status == "edited"
    assert c.new.text == rewrapped
    assert "normalised" in c.reason


def test_a_short_quote_whose_place_was_edited_is_not_moved_to_another_occurrence() -> None:
    old = "# A\n\nRun brew update first.\n\nLater: brew update fixes it.\n"
    new = "# A\n\nRun brew upgrade first.\n\nLater: brew update fixes it.\n"
    c = carry(old, new, "brew update first")
    assert c.status == "edited"
    assert c.new.text == "brew upgrade first"


def test_a_gone_document_with_no_trace_of_the_passage_is_removed() -> None:
    old = doc("policy.md", OLD)
    rebaser = Rebaser([old], [doc("other.md", "# Other\n\nNothing to do with refunds at all.\n")])
    start = OLD.index(REFUND)
    c = rebaser.carry(old, start, start + len(REFUND))
    assert c.status == "removed"


def test_items_take_their_worst_passage_and_unchanged_items_keep_their_line() -> None:
    new = OLD.replace(f"## Shipping\n\n{SHIPPING}\n\n", "")
    lines = [{"qid": "a", "question": "refund window?",
              "evidence": [{"path": "policy.md", "quote": REFUND}]},
             {"qid": "b", "question": "shipping and warranty?",
              "evidence": [{"path": "policy.md", "quote": WARRANTY},
                           {"path": "policy.md", "quote": SHIPPING}]},
             {"qid": "c", "question": "warranty by offsets?",
              "evidence": [{"path": "policy.md", "start": OLD.index(WARRANTY),
                            "end": OLD.index(WARRANTY) + len(WARRANTY)}]}]
    text = "\n".join(json.dumps(x) for x in lines)
    items, _ = parse_golden_lines(text, "g")
    rebaser = Rebaser([doc("policy.md", OLD)], [doc("policy.md", new)])
    results = rebase_items(items, {i + 1: x for i, x in enumerate(lines)}, rebaser, None,
                           {"at": "t"})
    check_landing(results, [doc("policy.md", new)])
    assert [r.status for r in results] == ["unchanged", "removed", "moved"]
    # "a" is unchanged but its document changed: evidence is rewritten (same quote), and it
    # carries its rebase record.
    assert results[0].obj["evidence"] == [{"path": "policy.md", "quote": REFUND}]
    assert results[1].obj["evidence"][1] == {"path": "policy.md", "quote": SHIPPING}
    assert results[1].obj["rebase"]["passages"][1]["status"] == "removed"
    # Offsets in, quote out: the moved span is written as the text it now holds.
    assert results[2].obj["evidence"] == [{"path": "policy.md", "quote": WARRANTY}]
    counts = summary(results, rebaser)
    assert counts["items"]["removed"] == 1 and counts["needs_review"] == 1
    assert counts["per_document"]["policy.md"] == {"unchanged": 1, "moved": 2, "edited": 0,
                                                   "removed": 1, "unplaced": 0}


def test_an_item_of_a_byte_identical_corpus_is_written_back_as_it_was() -> None:
    line = {"qid": "a", "question": "refund window?", "tags": ["x"],
            "evidence": [{"path": "policy.md", "quote": REFUND}]}
    items, _ = parse_golden_lines(json.dumps(line), "g")
    rebaser = Rebaser([doc("policy.md", OLD)], [doc("policy.md", OLD)])
    [r] = rebase_items(items, {1: line}, rebaser, None, {"at": "t"})
    assert r.status == "unchanged" and r.obj == line


def test_an_item_not_placed_in_the_old_corpus_is_unplaced_and_kept_whole() -> None:
    line = {"qid": "a", "question": "q?", "evidence": [{"path": "policy.md", "quote": "absent"}]}
    items, _ = parse_golden_lines(json.dumps(line), "g")
    rebaser = Rebaser([doc("policy.md", OLD)], [doc("policy.md", OLD)])
    [r] = rebase_items(items, {1: line}, rebaser, None, {})
    assert r.status == "unplaced" and r.obj["evidence"] == line["evidence"]


def test_chunk_id_items_are_carried_through_their_reference_chunks() -> None:
    from sweep.chunking.chunkers import ChunkSpec, chunk_corpus
    from sweep.chunking.tokenizers import load_chunk_tokenizer

    old = doc("policy.md", OLD)
    chunks = {c.chunk_id: c for c in chunk_corpus([old], ChunkSpec("paragraph", 32, 0, "none"),
                                                   load_chunk_tokenizer("minilm"))}
    cid = next(c.chunk_id for c in chunks.values() if REFUND in c.text)
    line = {"qid": "a", "question": "refund?", "relevant_chunk_ids": [cid],
            "answer_must_mention": ["30 days"]}
    items, _ = parse_golden_lines(json.dumps(line), "g")
    new = OLD.replace("Read this page", "Intro.\n\nRead this page")
    [r] = rebase_items(items, {1: line}, Rebaser([old], [doc("policy.md", new)]), chunks, {})
    assert r.status == "moved"
    assert "relevant_chunk_ids" not in r.obj
    assert r.obj["rebase"]["old_chunk_ids"] == [cid]
    # Narrowed to the mention, as a sweep resolves it.
    assert r.obj["evidence"][0]["quote"] == "30 days"


def test_untouched_spans_map_onto_their_own_text_under_random_edits() -> None:
    """The invariant `moved` rests on, over many random edits of a real-looking text."""
    rng = random.Random(7)
    words = OLD.split(" ")
    for _ in range(60):
        new_words = list(words)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(new_words))
            op = rng.choice(["del", "ins", "sub"])
            if op == "del" and len(new_words) > 5:
                del new_words[i]
            elif op == "ins":
                new_words.insert(i, rng.choice(["extra", "words", "here\n\n", "7"]))
            else:
                new_words[i] = new_words[i].upper()
        new = " ".join(new_words)
        dd = DocDiff(OLD, new)
        assert "".join(t for op, t in text_diff(OLD, new) if op <= 0) == OLD
        for _ in range(20):
            a = rng.randrange(len(OLD) - 1)
            b = rng.randrange(a + 1, min(len(OLD), a + 80) + 1)
            if not dd.touched(a, b):
                s = dd.map_start(a)
                assert new[s:s + (b - a)] == OLD[a:b]


@pytest.mark.parametrize("passage", [REFUND, SHIPPING, WARRANTY])
def test_a_document_edited_everywhere_never_moves_a_passage_onto_other_words(passage: str
                                                                             ) -> None:
    new = OLD.replace("the", "THE").replace("two", "three").replace("50", "60")
    c = carry(OLD, new, passage)
    if c.status in ("unchanged", "moved"):
        assert c.new.text == passage
    else:
        assert c.status in ("edited", "removed")
