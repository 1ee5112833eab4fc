"""Development helpers, not part of a sweep: nothing in the stages, pipeline or commands
imports this package.

    python -m sweep.dev.fixtures DIR   # a tiny untrained cross-encoder (tests, offline demos)
"""
