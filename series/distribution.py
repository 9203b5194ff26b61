"""How `pip install` names this version of series: the one spec every template installs by.

The nightly templates (ci/, written by `series ci init`) and the measurement jobs
(`series measure --emit`) install series on a machine that has none; both take the spec
from here, and tests/test_workflows.py keeps every copy in a template equal to it.
"""

from __future__ import annotations

from series import __version__

DISTRIBUTION = "vllm-series"
REPOSITORY = "https://github.com/vllm-series/vllm-series"  # pyproject's Source URL
# False until the first release is on the package index: until then only the release tag
# in the repository installs this version. Flip it with the release that is published.
ON_INDEX = False


def pip_spec() -> str:
    """What `pip install` / `pipx install` takes to install this version of series."""
    return f"{DISTRIBUTION}=={__version__}" if ON_INDEX else f"git+{REPOSITORY}@v{__version__}"
