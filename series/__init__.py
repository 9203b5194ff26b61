"""series: a patch-series manager for downstream forks of vLLM."""

from __future__ import annotations

__version__ = "0.1.0"
