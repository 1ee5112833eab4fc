"""Evaluation: relevance from evidence spans, and the metrics."""
