"""Embedding: local models and the content-addressed vector cache."""
