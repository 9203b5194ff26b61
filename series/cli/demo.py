"""`series demo`: the five-minute tour on a small offline upstream."""
from __future__ import annotations

from pathlib import Path

import click

from series.cli import emit


@click.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path, file_okay=False))
def demo(directory: Path | None) -> None:
    """Build a small vLLM-shaped upstream and a fork in DIRECTORY, and run the tour.

    \b
    Works offline. DIRECTORY must be new or empty (default: a new temporary directory). The tour:
    status, touches, check, adopt-upstream 61050, rebase onto v0.31 with a merged topic
    and a conflict resolved, retiring the adopted PR on v0.32, test selection, and the
    patched wheel.
    """
    from series.commands import demo as cmd

    if directory is None:
        import tempfile

        directory = Path(tempfile.mkdtemp(prefix="series-demo-"))
    cmd.run(directory, emit)


COMMANDS = [demo]
