"""series.yaml: find, parse and validate it (file, line, key), and the one editor of it."""
