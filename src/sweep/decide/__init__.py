"""Deciding from finished sweeps: tables, paired statistics, winners, the baseline gate, reruns."""
