"""One configuration end to end: memoised inputs in, a JobResult out."""
