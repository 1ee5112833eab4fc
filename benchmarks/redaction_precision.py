"""How often free-text redaction (`sweep.common.secret.redact_text`) fires on real text.

None of the shared corpora holds personal data or keys (published papers, Wikipedia, manuals,
their questions), so every firing on them is a false positive: the counts are the cost of
redaction in precision. Each text (a question, a paragraph, an abstract, a page) goes through
`redact_text` once; the table gives, per corpus and kind, the firings and the texts, and
``--examples`` prints what fired (for docs/security.md's look-alike list).

    python benchmarks/redaction_precision.py [--examples 5] [--json out.json]

Needs ../shared/data (or $CHUNK_SWEEP_SHARED_DATA).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from sweep.common.secret import REDACTION_KINDS, redact_text

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CHUNK_SWEEP_SHARED_DATA") or ROOT.parent / "shared" / "data")


def _squad_like(path: Path) -> Iterator[str]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    for article in data:
        for para in article["paragraphs"]:
            yield para["context"]
            for qa in para["qas"]:
                yield qa["question"]


def _jsonl_texts(path: Path, *keys: str) -> Iterator[str]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            yield " ".join(str(obj.get(k) or "") for k in keys)


def _chroma(root: Path) -> Iterator[str]:
    import csv

    for md in sorted((root / "corpora").glob("*.md")):
        yield from _paragraphs(md.read_text(encoding="utf-8"))
    with (root / "questions_df.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            yield row["question"]


def _paragraphs(text: str) -> Iterator[str]:
    for para in re.split(r"\n\s*\n", text):
        if para.strip():
            yield para


def _markdown(root: Path) -> Iterator[str]:
    for md in sorted(root.rglob("*.md")):
        yield from _paragraphs(md.read_text(encoding="utf-8"))


def _html(root: Path) -> Iterator[str]:
    # Tags and scripts out, entities decoded: the page's text, paragraph by paragraph.
    for page in sorted(root.rglob("*.html")):
        raw = page.read_text(encoding="utf-8", errors="replace")
        raw = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", raw)
        text = html.unescape(re.sub(r"<[^>]+>", " ", raw))
        yield from _paragraphs(text)


CORPORA = {
    "covid_qa": lambda: _squad_like(SHARED / "covid_qa" / "200423_covidQA.json"),
    "squad_v1.1_dev": lambda: _squad_like(SHARED / "squad_v1.1_dev" / "dev-v1.1.json"),
    "scifact": lambda: _jsonl_texts(SHARED / "scifact" / "corpus.jsonl", "title", "text"),
    "scifact_queries": lambda: _jsonl_texts(SHARED / "scifact" / "queries.jsonl", "text"),
    "chroma_chunking_eval": lambda: _chroma(SHARED / "chroma_chunking_eval"),
    "homebrew_docs": lambda: _markdown(SHARED / "homebrew_docs" / "docs"),
    "python_docs_html": lambda: _html(SHARED / "python_docs_html"),
    "debian_reference_html": lambda: _html(SHARED / "debian_reference" / "html"),
}


def measure(examples: int) -> dict[str, dict[str, object]]:
    results: dict[str, dict[str, object]] = {}
    for name, texts in CORPORA.items():
        counts = dict.fromkeys(REDACTION_KINDS, 0)
        n_texts = n_chars = n_fired = 0
        shown: list[str] = []
        for text in texts():
            n_texts += 1
            n_chars += len(text)
            fired: list[tuple[str, str]] = []
            redact_text(text, counts, fired)
            if fired:
                n_fired += 1
                shown.extend(f"{kind}: {value!r}" for kind, value in fired[:examples - len(shown)])
        results[name] = {"texts": n_texts, "chars": n_chars, "texts_fired": n_fired,
                         "firings": counts, "examples": shown}
    return results


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=0, help="print up to N firings a corpus")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    if not SHARED.is_dir():
        print(f"{SHARED}: no shared data", file=sys.stderr)
        return 2
    results = measure(args.examples)
    kinds = " | ".join(REDACTION_KINDS)
    print(f"| corpus | texts | MB | texts fired | {kinds} |")
    print("|---|---:|---:|---:|" + "---:|" * len(REDACTION_KINDS))
    for name, r in results.items():
        c = r["firings"]
        print(f"| {name} | {r['texts']:,} | {int(r['chars']) / 1e6:.1f} | {r['texts_fired']} | "
              + " | ".join(str(c[k]) for k in REDACTION_KINDS) + " |")  # type: ignore[index]
    if args.examples:
        for name, r in results.items():
            for e in r["examples"]:  # type: ignore[attr-defined]
                print(f"{name}: {e}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
