from __future__ import annotations

from series.cli import main

if __name__ == "__main__":
    main()
