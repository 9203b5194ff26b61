"""What the fork ships: the integration tree and the patched vLLM wheel.

integration_tree.py  base + every active topic, in memory (the rebase engine's when present)
ziparchive.py        a zip reader/writer that copies unchanged members as raw bytes
overlay.py           the release wheel with the series laid over it, RECORD and version stamped
source.py            --from-source: vLLM's own build in a temporary worktree
fetch.py             release wheels fetched once with pip into a cache
manifest.py          what went into a wheel, written beside it
"""
