"""`series test`: the upstream CI steps that cover what the series touches; list or export them.

Selection reads the base's `.buildkite/test_areas` (series.evidence.testmap) and each
topic's own diff. `--run` (series.verbs.test.evidence) runs upstream's tests over the
installed release build in named trees and compares them with the base; this module
renders the plan (series.verbs.test.step_commands reads the steps' commands).
"""

from __future__ import annotations

from typing import Any, Callable

import click

from series.evidence.test_plan import Plan, select
from series.evidence.matrix import ResultMatrix
from series.cli_support import Context, emit, emit_json, pass_ctx
from series.errors import EXIT_WORSE
from series.workspace import Workspace


def run(
    ws: Workspace,
    plan: Plan,
    *,
    python: str,
    without: str | None = None,
    compare: tuple[str, str] | None = None,
    trees: tuple[str, ...] = (),
    steps: tuple[str, ...] = (),
    use_cache: bool = True,
    jobs: int | None = None,
    say: Callable[[str], None] = lambda _: None,
) -> ResultMatrix:
    """The evidence run (series.verbs.test.evidence) for the plan's covering steps."""
    from series.verbs.test import evidence

    names = evidence.tree_names(without, compare, trees)
    covering = [s.step for s in plan.selected]
    return evidence.run(
        ws, covering, sorted(plan.touched), names, python=python, steps=steps, use_cache=use_cache, jobs=jobs, say=say
    )


# --- output -------------------------------------------------------------------------------


def plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "base": plan.base,
        "source": plan.source,
        "rule": plan.rule,
        "always_steps_not_listed": plan.always,
        "problems": list(plan.problems),
        "steps": [
            {
                "key": s.step.key,
                "label": s.step.label,
                "device": s.step.device,
                "cpu": s.step.cpu,
                "optional": s.step.optional,
                "file": s.step.file,
                "working_dir": s.step.repo_dir,
                "commands": list(s.step.commands),
                "paths": list(s.paths),
                "topics": list(s.topics),
            }
            for s in plan.selected
        ],
    }


def render_plan(plan: Plan) -> str:
    lines = [
        f"{len(plan.selected)} upstream CI steps of {plan.base} ({plan.source}) cover "
        f"{len(plan.touched)} paths the series touches"
    ]
    for sel in plan.selected:
        s = sel.step
        flags = ", ".join(f for f in (s.device or "no device", "optional" if s.optional else "") if f)
        lines.append(f"  {s.label}  [{s.ident}; {flags}]  ({', '.join(sel.topics)})")
        for command in s.commands:
            lines.append(f"      {command}")
    if plan.always:
        lines.append(f"({plan.always} more steps run upstream on every change; --all-steps lists them)")
    for problem in plan.problems:
        lines.append(f"warning: skipped {problem}")
    return "\n".join(lines)


def formatted(
    ws: Workspace,
    plan: Plan,
    fmt: str,
    devices: tuple[str, ...] = (),
    exclude_optional: bool = False,
    max_steps: int | None = None,
) -> str:
    """The selected steps as a fork's CI runs them (series.evidence.pipeline), narrowed."""
    from series.evidence import pipeline

    settings = pipeline.load_settings(ws.series.path)
    chosen = pipeline.narrow(plan.selected, devices, exclude_optional, max_steps)
    if fmt == "github-matrix":
        return pipeline.github_matrix(chosen, settings)
    return pipeline.buildkite(chosen, settings)


@click.command("test")
@click.argument("topics", nargs=-1, metavar="[TOPIC]...")
@click.option(
    "--run",
    "do_run",
    is_flag=True,
    help="Run upstream's tests over the installed release build (see --python), in the "
    "trees base and series (or those --without/--compare/--tree name), and compare.",
)
@click.option(
    "--python",
    "python",
    metavar="PY",
    help="With --run: the interpreter of the environment that has the base release of vLLM "
    "(or the patched wheel of 'series build') and pytest installed (default: this one).",
)
@click.option(
    "--without",
    metavar="TOPIC",
    help="With --run: also the series without TOPIC; lists the tests that fail without it and pass with it.",
)
@click.option(
    "--compare",
    nargs=2,
    metavar="A B",
    help="With --run: topics A and B each alone on the base (ours vs the adopted PR), instead of the series.",
)
@click.option(
    "--tree",
    "trees",
    multiple=True,
    metavar="NAME",
    help="With --run: one more tree (base, series, without:TOPIC, only:TOPIC or its alias "
    "topic:TOPIC; pr:TOPIC: the topic replayed onto upstream's main, as its PR holds it, "
    "judged against main, which runs beside it; pr:TOPIC@REV: the PR branch REV as it is; "
    "repeatable).",
)
@click.option(
    "--step",
    "steps",
    multiple=True,
    metavar="KEY",
    help="With --run: run this step's own pytest commands whole instead of the selected test files (repeatable).",
)
@click.option("--no-cache", is_flag=True, help="With --run: rerun every tree, even cached results.")
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    metavar="N",
    help="With --run: at most N trees' pytest at once (default: every tree, up to one more "
    "than the CPU count; each holds torch and vLLM in memory). --jobs 1 when the tests "
    "share a fixed port or file across processes.",
)
@click.option("--all-steps", is_flag=True, help="Also list steps upstream runs on every change.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown", "github-matrix", "buildkite"]),
    default="text",
    help="markdown: the --run matrix as a PR comment; github-matrix: a GitHub Actions matrix "
    "(JSON); buildkite: a pipeline to upload.",
)
@click.option(
    "--device",
    "devices",
    multiple=True,
    metavar="DEVICE",
    help="With --format github-matrix|buildkite: only steps of this upstream device, e.g. h100 (repeatable).",
)
@click.option(
    "--exclude-optional",
    is_flag=True,
    help="With --format github-matrix|buildkite: leave out upstream's optional steps (else "
    "they sit behind a block step).",
)
@click.option(
    "--max-steps",
    type=click.IntRange(min=0),
    metavar="N",
    help="With --format github-matrix|buildkite: at most N steps (the first in file order).",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output for CI (per-test matrix with --run).")
@pass_ctx
@click.pass_context
def command(
    click_ctx: click.Context,
    ctx: Context,
    topics: tuple[str, ...],
    do_run: bool,
    python: str | None,
    without: str | None,
    compare: tuple[str, str] | None,
    trees: tuple[str, ...],
    steps: tuple[str, ...],
    no_cache: bool,
    jobs: int | None,
    all_steps: bool,
    fmt: str,
    devices: tuple[str, ...],
    exclude_optional: bool,
    max_steps: int | None,
    as_json: bool,
) -> None:
    """Upstream's CI steps that cover what the series (or the given TOPICs) touches; with
    --run, upstream's own tests over the release build, with and without a topic.

    \b
    Steps come from the base's .buildkite/test_areas/*.yaml, chosen by upstream's own rule:
    a changed path selects a step when it is, or is below, one of the step's
    source_file_dependencies and under none of its '!' exclusions (an exclusion always
    wins), or is the step's YAML file; a run-all path (ci_config.yaml: setup.py, csrc/ ...)
    selects every step. An older base with only .buildkite/test-pipeline.yaml is read
    with the rule of its era (a dependency anywhere in the path selects the step; a step
    without dependencies runs on every change). Optional steps go behind a Buildkite
    block step. Devices map to
    your queues or runner labels through series.yaml 'ci: queues: {h100: my-h100}'.
    \b
    --run needs one environment with the base release of vLLM, torch and pytest (see the
    README). Every tree is the installed build with that tree's Python changes laid over
    it; the tests come from the tree, where the source cannot shadow the build. The test
    files are those of the covering steps (GPU steps too: what cannot run here skips or
    fails on base as well) that import a changed module, plus the topics' own tests.
    Tests failing on base are this machine's and count against no tree.
    pr:TOPIC stands on upstream's main: main's Python over the release's compiled parts,
    with main's tests, judged against main (added beside it).
    Exit 0: no test worse than on base; 5: some test is worse; 130/143: interrupted
    (the partial matrix is printed).
    \b
    Examples:
      series test                               steps covering the whole series
      series test offload-evict-fix --run --python ~/vllm-0.31/bin/python
      series test --run --without offload-evict-fix   evidence the topic is needed
      series test --run --compare offload-evict-fix pr-61050 --format markdown
      series test --run --step kv-offload       that step's commands, whole
      series test offload-evict-fix --run --tree pr:offload-evict-fix   the PR's own tree
      series test --format github-matrix        one GitHub Actions job per step
      series test --format buildkite --device h100 --exclude-optional --max-steps 20
    """

    if (steps or without or compare or trees or python or no_cache or jobs) and not do_run:
        raise click.UsageError("--python, --without, --compare, --tree, --step, --no-cache and --jobs go with --run")
    if fmt == "markdown" and not do_run:
        raise click.UsageError("--format markdown renders the --run matrix: add --run")
    ws = ctx.workspace()
    plan = select(ws, topics or (tuple(compare) if compare else ()), include_always=all_steps)
    if (devices or exclude_optional or max_steps is not None) and fmt not in ("github-matrix", "buildkite"):
        raise click.UsageError("--device, --exclude-optional and --max-steps go with --format github-matrix|buildkite")
    if fmt in ("github-matrix", "buildkite"):
        emit(formatted(ws, plan, fmt, devices, exclude_optional, max_steps))
        return
    if not do_run:
        if as_json:
            emit_json(plan_json(plan))
        else:
            emit(render_plan(plan))
        return
    import sys

    from series.evidence import matrix
    from series.verbs.test.evidence import EvidenceInterrupted

    def show(result: "matrix.ResultMatrix") -> None:
        if as_json:
            emit_json(matrix.to_json(result))
        elif fmt == "markdown":
            emit(matrix.render_markdown(result))
        else:
            emit(matrix.render_text(result))

    try:
        result = run(
            ws,
            plan,
            python=python or sys.executable,
            without=without,
            compare=(compare[0], compare[1]) if compare else None,
            trees=trees,
            steps=steps,
            use_cache=not no_cache,
            jobs=jobs,
            say=lambda msg: click.echo(msg, err=True),
        )
    except EvidenceInterrupted as stop:
        show(stop.matrix)
        click.echo(f"series: interrupted ({stop.matrix.interrupted}); temporary files removed", err=True)
        click_ctx.exit(128 + stop.signum)
    show(result)
    if result.worse():
        click_ctx.exit(EXIT_WORSE)
