"""The truncation check tokenises in batches (issue 14, item 3: one tokenizer call over the
69k chunks of a 52 MB document held every encoding at once)."""

from __future__ import annotations

import pytest

import sweep.embedding.models as emb


class _CountingModel:
    """Records the size of every tokenizer call; a text's length is its word count + 2."""

    max_seq_length = 4

    def __init__(self) -> None:
        self.calls: list[int] = []

    def get_embedding_dimension(self) -> int:
        return 8

    def tokenizer(self, texts: list[str], **kw: object) -> dict[str, list]:
        self.calls.append(len(texts))
        ids = [[0] * (len(t.split()) + 2) for t in texts]
        if kw.get("return_offsets_mapping"):  # truncated at max_length: offsets of kept words
            limit = int(kw["max_length"])  # type: ignore[arg-type]
            return {"offset_mapping": [[(0, 0), *[(i, i + 1) for i in range(min(len(t.split()),
                                                                                limit - 2))],
                                        (0, 0)] for t in texts]}
        return {"input_ids": ids}


def test_token_lengths_and_kept_chars_are_computed_in_batches(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = _CountingModel()
    monkeypatch.setattr(emb, "_load_sentence_transformer", lambda path, name: model)
    monkeypatch.setattr(emb, "TOKENIZE_BATCH", 3)
    embedder = emb.LocalEmbedder(emb.EmbeddingSpec(name="fake-model"))
    texts = [" ".join(["w"] * (i % 5)) + f" t{i}" for i in range(10)]  # 1 to 5 words
    assert embedder.token_lengths(texts) == [len(t.split()) + 2 for t in texts]
    assert model.calls == [3, 3, 3, 1]
    model.calls.clear()
    kept = embedder.kept_chars(texts)
    over = [i for i, t in enumerate(texts) if len(t.split()) + 2 > 4]  # 3+ words: truncated
    assert [i for i, k in enumerate(kept) if k is not None] == over
    assert all(kept[i] == 2 for i in over)  # two words kept: the last offset ends at 2
    assert model.calls == [3, 3]  # the 6 truncated texts, 3 at a time
