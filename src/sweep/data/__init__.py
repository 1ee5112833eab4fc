"""Inputs: the corpus, the golden set, their validation, and importers of public formats."""
