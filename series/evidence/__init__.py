"""Upstream's tests as evidence: which CI steps cover the series, the trees they run in, the runs and their table."""
