"""Carrying a topic upstream: the grade against vLLM's first-PR norms, reviewers, safe mentions, the PR body, duplicates."""
