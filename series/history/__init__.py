"""Upstream's history as a maintainer reads it: which commit and PR did what, and which paths each topic touches."""
