"""SQuAD v1.1 layout (also COVID-QA): one JSON file of articles, paragraphs and answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sweep.common.errors import SweepError
from sweep.data.importers.common import (
    ImportResult,
    OffsetMap,
    Report,
    SlugRegistry,
    Spans,
    clean_text,
    finish_report,
    get_field,
    get_id,
    golden_item,
    mark_benchmark,
    must_mention,
    progress,
    read_json,
    require_object,
    safe_slug,
)


def convert_squad(data: Any, source: str) -> ImportResult:
    """SQuAD v1.1 layout (``{"data": [{"title", "paragraphs": [{"context", "qas"}]}]}``).

    One document per article: its contexts joined by a blank line, answers shifted with them.
    COVID-QA's variant (``document_id`` on paragraphs, no title, integer ids) is covered.
    SQuAD v2's unanswerable questions (no answers) are reported and left out.
    """
    rep = Report("squad", source)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise SweepError(f"{source}: expected a JSON object with a `data` list (SQuAD layout)")
    slugs = SlugRegistry()
    documents: list[tuple[str, str]] = []
    items: list[dict[str, Any]] = []
    seen_qids: set[str] = set()
    articles = data["data"]
    for a_index, article in enumerate(progress(articles, "articles")):
        where = f"{source}: data[{a_index}]"
        require_object(article, where)
        paragraphs = get_field(article, "paragraphs", where, (list,))
        title = article.get("title")
        if not isinstance(title, str | int) or isinstance(title, bool) or not str(title).strip():
            title = next((p.get("document_id") for p in paragraphs if isinstance(p, dict)
                          and p.get("document_id") not in (None, "")), None)
        title = str(title).strip() if title is not None else f"article-{a_index}"
        doc_id = slugs.unique(safe_slug(title, fallback=f"article-{a_index}"))

        contexts: list[tuple[str, OffsetMap]] = []
        for p_index, paragraph in enumerate(paragraphs):
            p_where = f"{where}.paragraphs[{p_index}]"
            require_object(paragraph, p_where)
            raw = get_field(paragraph, "context", p_where, (str,))
            contexts.append((raw, OffsetMap(raw)))
        bases, pos = [], 0
        for _, omap in contexts:
            bases.append(pos)
            pos += len(omap.clean) + 2
        doc_text = "\n\n".join(omap.clean for _, omap in contexts)
        if not doc_text.strip():
            n = sum(len(p.get("qas") or []) for p in paragraphs)
            rep.notes.append(f"data[{a_index}] ({title!r}): empty article, skipped with its "
                             f"{n} question(s)")
        else:
            documents.append((f"{doc_id}.txt", doc_text))

        for p_index, paragraph in enumerate(paragraphs):
            p_where = f"{where}.paragraphs[{p_index}]"
            raw, omap = contexts[p_index]
            for q_index, qa in enumerate(get_field(paragraph, "qas", p_where, (list,))):
                q_where = f"{p_where}.qas[{q_index}]"
                require_object(qa, q_where)
                rep.bump("questions_read")
                qid = get_id(qa, "id", q_where)
                question = get_field(qa, "question", q_where, (str,)).strip()
                answers = get_field(qa, "answers", q_where, (list,))
                spans = Spans(rep, qid)
                if doc_text.strip():
                    for an_index, answer in enumerate(answers):
                        an_where = f"{q_where}.answers[{an_index}]"
                        require_object(answer, an_where)
                        text = get_field(answer, "text", an_where, (str,))
                        start = get_field(answer, "answer_start", an_where, (int,))
                        spans.add(doc_id, bases[p_index], omap.clean,
                                  clean_text(text), omap(start))
                reason = _drop_reason(qid, question, seen_qids, answers, spans, doc_text)
                if reason:
                    rep.bump("questions_dropped")
                    rep.drop("question", qid, question, reason)
                    continue
                seen_qids.add(qid)
                items.append(golden_item(qid, question, must_mention(spans.texts), [doc_id],
                                   spans.evidence))
    finish_report(rep, documents, items)
    mark_benchmark(items, source)
    return ImportResult("squad", source, documents, items, rep.as_dict())


def _drop_reason(qid: str, question: str, seen: set[str], answers: list[Any], spans: Spans,
                 doc_text: str) -> str | None:
    if qid in seen:
        return "duplicate qid"
    if not question:
        return "empty question"
    if not doc_text.strip():
        return "its article has no text"
    if not answers:
        return "no answers (unanswerable question)"
    if not spans.evidence:
        return "none of its answers could be placed"
    return None


def import_squad(src: str | Path) -> ImportResult:
    path = Path(src)
    return convert_squad(read_json(path, "SQuAD JSON file"), str(path))
