"""CODEOWNERS matched as GitHub's "About code owners" documents it: the example file of the
docs, each of its comments turned into assertions, the documented exceptions to gitignore,
and hostile patterns that must not take exponential time."""

from __future__ import annotations

import subprocess
import sys

import pytest

from series.propose.codeowners import decide, parse

# GitHub's example CODEOWNERS (docs.github.com, "Example of a CODEOWNERS file"), in the
# order the docs give it: the last matching pattern wins.
DOCS_EXAMPLE = """\
# This is a comment.
# Each line is a file pattern followed by one or more owners.
* @global-owner1 @global-owner2
*.js @js-owner #This is an inline comment.
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/* docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
"""


def owners(text: str, path: str) -> tuple[str, ...] | None:
    rule = decide(parse(text), path)
    return rule.owners if rule else None


@pytest.mark.parametrize(
    "path, expected",
    [
        ("README.md", ("@global-owner1", "@global-owner2")),
        ("src/app.js", ("@js-owner",)),  # the inline comment is not an owner
        ("cmd/main.go", ("docs@example.com",)),
        ("notes/a.txt", ("@octo-org/octocats",)),
        ("build/logs/today.log", ("@octocat",)),  # '**/logs' comes later and wins
        ("build/logs/deep/er.txt", ("@octocat",)),
        ("build/other.txt", ("@octo-org/octocats",)),
        ("scripts/run.sh", ("@doctocat", "@octocat")),
        ("deeply/nested/logs/x.py", ("@octocat",)),
        ("x/apps/y.py", ("@octocat",)),  # 'apps/': any directory named apps
        ("apps/github/z.py", ()),  # '/apps/github' with no owners unowns it
        ("apps/other/z.py", ("@octocat",)),
    ],
)
def test_the_docs_example_file(path: str, expected: tuple[str, ...]) -> None:
    assert owners(DOCS_EXAMPLE, path) == expected


def test_docs_star_matches_one_level_only() -> None:
    text = "docs/* docs@example.com\n"
    assert owners(text, "docs/getting-started.md") == ("docs@example.com",)
    assert owners(text, "docs/build-app/troubleshooting.md") is None
    # '/docs/' owns the directory at the root and everything in it, and only at the root
    text = "/docs/ @doctocat\n"
    assert owners(text, "docs/build-app/troubleshooting.md") == ("@doctocat",)
    assert owners(text, "src/docs/a.md") is None
    assert owners(text, "docs") is None  # a file named docs is not the directory


def test_the_last_documented_example_gives_apps_github_its_own_owner() -> None:
    text = "/apps/ @octocat\n/apps/github @doctocat\n"
    assert owners(text, "apps/github/a.rb") == ("@doctocat",)
    assert owners(text, "apps/a.rb") == ("@octocat",)


@pytest.mark.parametrize(
    "pattern, path, hit",
    [
        ("/src/lib", "src/lib/x.py", True),  # a file or a directory and all below it
        ("/src/lib", "src/lib", True),
        ("/src/lib", "src/library/x.py", False),
        ("/src/lib", "a/src/lib/x.py", False),  # a slash at the start anchors
        ("src/lib", "a/src/lib/x.py", False),  # a slash in the middle anchors too
        ("lib", "a/b/lib/x.py", True),  # no slash: any depth
        ("*.py", "a/b/c.py", True),
        ("a/*.py", "a/b/c.py", False),  # '*' does not cross '/'
        ("a/**/c.py", "a/c.py", True),  # '/**/': zero or more directories
        ("a/**/c.py", "a/b/d/c.py", True),
        ("a/**", "a/b/c", True),
        ("a/**", "b/a/c", False),
        ("a**b", "a/x/b", False),  # '**' inside a name is one '*'
        ("a**b", "axxb", True),
        ("f?o", "fao", True),
        ("f?o", "f/o", False),
        ("path\\ with\\ spaces/", "path with spaces/a.md", True),
        ("path\\ with\\ spaces/", "path/a.md", False),
        ("[ab].py", "a.py", False),  # no '[ ]' ranges in CODEOWNERS
        ("[ab].py", "[ab].py", True),
        ("!keep.py", "keep.py", False),  # no '!' negation: a plain '!'
        ("Docs/", "docs/a.md", False),  # case-sensitive
    ],
)
def test_patterns(pattern: str, path: str, hit: bool) -> None:
    assert (owners(f"{pattern} @o\n", path) == ("@o",)) is hit


def test_comments_and_escaped_spaces_in_owner_lines() -> None:
    rules = parse("# a comment\n\\#notes.md @x\n  \nmy\\ dir/ @a @b # trailing\n")
    assert [(r.pattern, r.owners, r.line) for r in rules] == [("my\\ dir/", ("@a", "@b"), 4)]


HOSTILE = [
    "************************x",
    "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
    "**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/x",
    "?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*?*x",
]


def test_hostile_patterns_finish_at_once() -> None:
    """In a child process with a timeout (no timing assertion): the old re translation ran
    past 60 s on the first pattern; this walk is O(n*m)."""
    script = (
        "from series.propose.codeowners import parse, decide\n"
        f"rules = parse({''.join(p + ' @evil' + chr(10) for p in HOSTILE)!r})\n"
        "paths = ['a' * 4000, '/'.join(['a' * 40] * 100), 'a' * 3000 + 'x']\n"
        "print([bool(decide(rules, p)) for p in paths])\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[False, False, True]", proc.stdout
