"""Shared plumbing every layer may use: the error type, atomic files, SQLite, network checks, plain-dict helpers."""
