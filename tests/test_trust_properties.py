"""Property tests for the transaction (issue 11): random bytes and random structures fed to the
series.yaml loader, the patch parser and importer, and the GitHub answer parsers. The only
way out is SeriesError (exit 1, one line); anything else would be exit 4, a traceback.

Bounded (a few hundred examples, derandomized) so the suite stays fast and repeatable.
"""

from __future__ import annotations

import io
import json
import string
import tempfile
from pathlib import Path
from typing import Any

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from series.seriesfile import config
from series.errors import SeriesError
from series.forge.github import GitHubForge
from series.forge.http import Answer, ApiClient
from series.model import PRNumber
from series.patches import format as patch_format
from series.patches.importer import make_commit

FAST = settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
# generating nested structures costs more than checking them: fewer, still varied
STRUCTURED = settings(FAST, max_examples=40)

GOOD_YAML = (
    b"upstream:\n  remote: upstream\n  base: v0.30.0\n  github: vllm-project/vllm\n"
    b"integration: fork/main\ntopics:\n  - name: a\n    branch: topic/a\n    upstream_pr: 7\n"
    b"  - name: b\n    branch: topic/b\n    depends_on: [a]\n    status: superseded\n"
    b"    superseded_by: a\n"
)
KEYS = list(config.TOP_KEYS + config.UPSTREAM_KEYS + config.TOPIC_KEYS) + ["", "x"]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(["upstream", "v0.30.0", "-x", "a b", "..", "topic/a", "@{", "a.lock"]),
)
structures = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), inner, max_size=5),
    ),
    max_leaves=25,
)


def load_bytes(data: bytes) -> None:
    try:
        config.parse(config.decode_text(data, "series.yaml"), Path("series.yaml"))
    except SeriesError as exc:
        assert "\n" not in str(exc).strip() or "malformed" in str(exc), str(exc)


@FAST
@given(st.binary(max_size=400))
def test_series_yaml_random_bytes(data: bytes) -> None:
    load_bytes(data)


@FAST
@given(st.binary(max_size=60), st.integers(min_value=0, max_value=len(GOOD_YAML)))
def test_series_yaml_good_file_with_random_bytes_spliced_in(noise: bytes, at: int) -> None:
    load_bytes(GOOD_YAML[:at] + noise + GOOD_YAML[at:])


@STRUCTURED
@given(structures)
def test_series_yaml_random_structures(doc: Any) -> None:
    out = io.StringIO()
    YAML(typ="safe", pure=True).dump({"upstream": doc} if not isinstance(doc, dict) else doc, out)
    load_bytes(out.getvalue().encode("utf-8", "surrogatepass"))


@STRUCTURED
@given(
    st.sampled_from(
        [
            "remote",
            "base",
            "github",
            "api_url",
            "integration",
            "branch",
            "name",
            "upstream_pr",
            "upstream_head",
            "depends_on",
            "merged_in",
            "status",
        ]
    ),
    scalars,
)
def test_series_yaml_one_field_replaced(key: str, value: Any) -> None:
    yaml = YAML(typ="safe", pure=True)
    doc = yaml.load(GOOD_YAML)
    target = doc["upstream"] if key in config.UPSTREAM_KEYS else doc if key == "integration" else doc["topics"][0]
    target[key] = value
    out = io.StringIO()
    yaml.dump(doc, out)
    load_bytes(out.getvalue().encode("utf-8", "surrogatepass"))


# -- patch files --------------------------------------------------------------------------------

PATCH = (
    "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    "From: Ada Upstream <ada@example.com>\nDate: Mon, 19 Jan 2026 12:00:00 +0100\n"
    "Subject: [PATCH 1/1] add a file\n\nbody\n---\n a.txt | 1 +\n\n"
    "diff --git a/a.txt b/a.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000.."
    "78981922613b2afb6025042ff6bd878ac1994e85\n--- /dev/null\n+++ b/a.txt\n@@ -0,0 +1 @@\n+a\n"
)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> pygit2.Repository:
    path = tmp_path_factory.mktemp("patches")
    repo = pygit2.init_repository(str(path))
    sig = pygit2.Signature("T", "t@example.com", 1700000000, 0)
    tree = repo.TreeBuilder().write()
    repo.create_commit("refs/heads/main", sig, sig, "root\n", tree, [])
    return repo


def import_patch(repo: pygit2.Repository, data: bytes) -> None:
    parent = repo.references["refs/heads/main"].peel(pygit2.Commit)
    sig = pygit2.Signature("T", "t@example.com", 1700000000, 0)
    try:
        patch = patch_format.parse(patch_format.decode(data), "t/0001.patch")
        commit = make_commit(repo, parent, patch, sig, "t/0001.patch")
    except SeriesError:
        return
    # what was written is a commit git's fsck --strict accepts: a sane author and date
    assert "<" not in commit.author.name and "\n" not in commit.author.name
    assert 0 <= commit.author.time <= 253402300799 and abs(commit.author.offset) <= 99 * 60 + 59


def test_the_sample_patch_imports(repo: pygit2.Repository) -> None:
    parent = repo.references["refs/heads/main"].peel(pygit2.Commit)
    sig = pygit2.Signature("T", "t@example.com", 1700000000, 0)
    commit = make_commit(repo, parent, patch_format.parse(PATCH, "t"), sig, "t")
    assert commit.author.offset == 60 and commit.tree["a.txt"].id == pygit2.Oid(
        hex="78981922613b2afb6025042ff6bd878ac1994e85"
    )


@FAST
@given(st.binary(max_size=400))
def test_patch_random_bytes(repo: pygit2.Repository, data: bytes) -> None:
    import_patch(repo, b"From " + data)


@FAST
@given(st.binary(max_size=40), st.integers(min_value=0, max_value=len(PATCH)))
def test_patch_with_random_bytes_spliced_in(repo: pygit2.Repository, noise: bytes, at: int) -> None:
    raw = PATCH.encode()
    import_patch(repo, raw[:at] + noise + raw[at:])


@FAST
@given(
    st.sampled_from(["From", "Date", "Subject"]),
    st.text(alphabet=string.printable + "<>=?\x00\u00e9\ud800", max_size=60),
)
def test_patch_header_replaced(repo: pygit2.Repository, header: str, value: str) -> None:
    lines = [f"{header}: {value}" if line.startswith(f"{header}: ") else line for line in PATCH.split("\n")]
    import_patch(
        repo, "\n".join(lines).encode("utf-8", "surrogateescape" if "\ud800" not in value else "surrogatepass")
    )


# -- GitHub answers --------------------------------------------------------------------------


class Canned(ApiClient):
    """An ApiClient that answers every GET with the same body."""

    def __init__(self, body: bytes, link: str | None = None):
        super().__init__("http://127.0.0.1:1", None, cache=None)
        self.body, self.link = body, link

    def get(self, url: str, what: str, headers: dict[str, str]) -> Answer:
        return Answer(200, self.body, self.link, None)


def ask(body: bytes) -> None:
    import datetime as dt

    for question in ("pull", "files", "list"):
        forge = GitHubForge("vllm-project/vllm", "http://127.0.0.1:1", None, client=Canned(body))
        try:
            if question == "pull":
                forge.pull(PRNumber(61050))
            elif question == "files":
                forge.pull_files(PRNumber(61050))
            else:
                forge.list_pulls(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
        except SeriesError as exc:
            assert "\n" not in str(exc), str(exc)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=20),
        st.sampled_from(
            [
                "a" * 40,
                "--upload-pack=x",
                "2026-01-01T00:00:00Z",
                "open",
                "closed",
                "https://github.com/vllm-project/vllm/pull/61050",
            ]
        ),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(
                [
                    "number",
                    "title",
                    "state",
                    "head",
                    "base",
                    "sha",
                    "user",
                    "login",
                    "html_url",
                    "merged",
                    "merged_at",
                    "merge_commit_sha",
                    "updated_at",
                    "closed_at",
                    "filename",
                    "patch",
                    "previous_filename",
                ]
            ),
            inner,
            max_size=8,
        ),
    ),
    max_leaves=30,
)


@FAST
@given(st.binary(max_size=200))
def test_github_random_bytes(body: bytes) -> None:
    ask(body)


@STRUCTURED
@given(json_values)
def test_github_random_json(value: Any) -> None:
    ask(json.dumps(value).encode())


@STRUCTURED
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "title",
                "state",
                "head",
                "base",
                "user",
                "html_url",
                "merged",
                "merge_commit_sha",
                "updated_at",
                "closed_at",
            ]
        ),
        json_values,
        max_size=4,
    )
)
def test_github_pull_with_random_fields(change: dict[str, Any]) -> None:
    pull = {
        "number": 61050,
        "title": "t",
        "state": "open",
        "html_url": "https://github.com/vllm-project/vllm/pull/61050",
        "head": {"sha": "a" * 40},
        "base": {"sha": "b" * 40},
        "user": {"login": "ada"},
        "updated_at": "2026-01-02T00:00:00Z",
    }
    pull.update(change)
    ask(json.dumps(pull).encode())
    ask(json.dumps([pull]).encode())


# --- `series propose --evidence FILE`: whatever passes the check renders ---------------------

leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=6), st.sampled_from(["passed", "failed", "base", "t::a"])
)
anything = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)),
    max_leaves=12,
)
names = st.sampled_from(["base", "series", "passed", "failed", "t::a", ""])
evidence_values = st.fixed_dictionaries(
    {},
    optional={
        "summary": st.one_of(
            anything,
            st.dictionaries(names, st.one_of(anything, st.dictionaries(names, anything, max_size=3)), max_size=3),
        ),
        "tests": anything,
        "build": anything,
        "machine": anything,
        "needed": st.one_of(anything, st.dictionaries(names, anything, max_size=2)),
        "worse": st.one_of(anything, st.dictionaries(names, anything, max_size=2)),
        "with_series": st.one_of(
            anything,
            st.lists(
                st.one_of(
                    anything,
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "label": anything,
                            "step": anything,
                            "status": anything,
                            "commands": st.one_of(
                                anything,
                                st.lists(
                                    st.one_of(
                                        anything,
                                        st.fixed_dictionaries(
                                            {},
                                            optional={"tests": st.one_of(anything, st.dictionaries(names, anything))},
                                        ),
                                    ),
                                    max_size=2,
                                ),
                            ),
                        },
                    ),
                ),
                max_size=2,
            ),
        ),
        "without": st.one_of(
            anything,
            st.fixed_dictionaries(
                {},
                optional={
                    "evidence": st.one_of(
                        anything,
                        st.lists(
                            st.one_of(anything, st.dictionaries(st.sampled_from(["test", "step"]), anything)),
                            max_size=2,
                        ),
                    )
                },
            ),
        ),
    },
)


@FAST
@given(st.one_of(evidence_values, anything))
def test_evidence_that_passes_the_check_renders(data: Any) -> None:
    from series.propose import prbody

    try:
        checked = prbody.check_evidence(data)
    except ValueError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    assert isinstance(prbody.results(checked), str)


def read_rebase_report(body: bytes) -> None:
    """`ci report --rebase FILE` and `ci owners --report FILE`: a report or one line naming the file."""
    from series.verbs.ci.report import read_rebase

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rebase.json"
        path.write_bytes(body)
        try:
            read_rebase(path)
        except SeriesError as exc:
            assert "\n" not in str(exc) and str(path) in str(exc), str(exc)


rebase_rows = st.dictionaries(
    st.sampled_from(["name", "outcome", "conflict", "commit", "subject", "files"]), json_values, max_size=5
)


@STRUCTURED
@given(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "schema": st.sampled_from([1, 1, "1", None]),
                "status": json_values,
                "topics": st.one_of(
                    json_values,
                    st.lists(
                        st.one_of(
                            rebase_rows,
                            st.fixed_dictionaries(
                                {"name": st.text(max_size=5), "outcome": st.text(max_size=5), "conflict": rebase_rows}
                            ),
                        ),
                        max_size=3,
                    ),
                ),
            }
        ),
    )
)
def test_rebase_report_random_json(value: Any) -> None:
    read_rebase_report(json.dumps(value).encode())


@FAST
@given(st.binary(max_size=200))
def test_rebase_report_random_bytes(body: bytes) -> None:
    read_rebase_report(body)
