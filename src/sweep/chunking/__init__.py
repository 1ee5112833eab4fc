"""Chunking: tokenizers that count, and boundaries that cut documents into spans."""
