"""What `series propose` checks and writes before a PR is posted (issue 35 moves grade, prbody, duplicates here)."""
