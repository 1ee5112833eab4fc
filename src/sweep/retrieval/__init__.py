"""Retrieval: ranking primitives, BM25, rerankers, and one question through every stage (search)."""
