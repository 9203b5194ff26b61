"""What the fork ships: the integration tree and the patched vLLM wheel (overlay, zip archive, fetch, source build)."""
