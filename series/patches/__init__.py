"""The series as reviewable files: format-patch style patches, export, import.

format.py   write and parse one commit as a `git format-patch`-style file (stable: no
            commit ids, no version trailer, so re-exporting an unchanged series is a no-op)
export.py   `series export`: one directory per active topic, an `order` file, series.yaml
importer.py `series import`: rebuild the topic branches on upstream.base in memory
"""
