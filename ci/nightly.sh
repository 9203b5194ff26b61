#!/usr/bin/env bash
# The nightly pipeline a fork copies: does the series still apply to upstream's newest
# release (or main)? If it does: rebase, build the patched wheel, select upstream's tests.
#
#   nightly.sh [--onto latest|vX.Y|REF|main] [--wheel vllm==X|PATH.whl|none]
#              [--format github-matrix|buildkite] [--device D]... [--exclude-optional]
#              [--max-steps N] [--out DIR] [--no-fetch] [--print-target] [-C DIR]
#              [--breaks fail|warn]
#
# Run from the fork clone (where series.yaml is), or pass -C. Everything it writes goes to
# --out (default: nightly/): report.md, rebase.json, build.json, the wheel and its
# manifest, tests.txt, the CI steps (ci-steps.json or ci-steps.yml; --device, --exclude-optional
# and --max-steps narrow them) and, on a conflict, owners.txt (whom to mention).
# --print-target fetches, prints the resolved target (e.g. v0.31.0) and exits.
# --breaks (default: series.yaml ci.breaks, else warn): fail rebases with --strict, so a
# semantic break of a clean replay (an upstream name a topic uses, removed or changed)
# stops the night like a conflict; warn rebases and lists the breaks in report.md.
# Exit: 0 the series applies (wheel built, tests selected); 3 it no longer applies, or
# breaks under --breaks fail (the summary is printed and in report.md); else a failed step.
#
# Environment: SERIES (the command, default "series"), SERIES_REMOTE (default: the
# upstream remote named in series.yaml). No secrets are read here; see ci/README.md.
set -uo pipefail

SERIES=${SERIES:-series}
ONTO=latest
WHEEL=""
FORMAT=github-matrix
OUT=nightly
FETCH=1
DIR=.

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; }
STEPS_ARGS=()
REBASED=()
PRINT_TARGET=0
BREAKS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --onto) ONTO=$2; shift 2 ;;
    --wheel) WHEEL=$2; shift 2 ;;
    --format) FORMAT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --no-fetch) FETCH=0; shift ;;
    --device) STEPS_ARGS+=(--device "$2"); shift 2 ;;
    --exclude-optional) STEPS_ARGS+=(--exclude-optional); shift ;;
    --max-steps) STEPS_ARGS+=(--max-steps "$2"); shift 2 ;;
    --print-target) PRINT_TARGET=1; shift ;;
    --breaks) BREAKS=$2; shift 2 ;;
    -C) DIR=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "nightly: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

cd "$DIR" || { echo "nightly: no such directory $DIR" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
REPORT="$OUT/report.md"
log() { echo "nightly: $*" >&2; }
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {'d': d}))" "$@"; }

# --- where we are ---------------------------------------------------------------------------
$SERIES status --json > "$OUT/status-before.json" || { log "series status failed"; exit 1; }
BASE=$(json "$OUT/status-before.json" "d['base']")
CONFIG=$(git rev-parse --show-toplevel 2>/dev/null)/series.yaml
[ -f series.yaml ] && CONFIG=series.yaml
REMOTE=${SERIES_REMOTE:-$(sed -n 's/^  remote: *\([^ #]*\).*/\1/p' "$CONFIG" 2>/dev/null | head -n 1)}
REMOTE=${REMOTE:-upstream}
BREAKS=${BREAKS:-$($SERIES ci setting breaks)} || { log "series.yaml ci.breaks: see the error above"; exit 1; }
case "$BREAKS" in
  fail) STRICT=(--strict) ;;
  warn) STRICT=() ;;
  *) echo "nightly: --breaks is fail or warn, not $BREAKS" >&2; exit 2 ;;
esac

# --- fetch upstream ---------------------------------------------------------------------------
if [ "$FETCH" = 1 ]; then
  log "fetching $REMOTE"
  git fetch --quiet --tags --prune "$REMOTE" || { log "git fetch $REMOTE failed"; exit 1; }
fi

# --- the target: newest release tag, or upstream main ------------------------------------------
# series resolves release names (latest, v0.31) as every verb does: PEP 440 order, post and
# four-part releases, never an rc unless named exactly (series release --help)
case "$ONTO" in
  main) ONTO="$REMOTE/main" ;;
  latest|v[0-9]*)
    ONTO=$($SERIES release "$ONTO") || { log "no release for --onto here; pass --onto $REMOTE/main"; exit 1; } ;;
esac
if [ "$PRINT_TARGET" = 1 ]; then echo "$ONTO"; exit 0; fi
if [ -z "$WHEEL" ]; then
  case "$ONTO" in
    v[0-9]*) WHEEL="vllm==${ONTO#v}" ;;
    *) WHEEL=none; log "no release wheel for $ONTO: skipping the wheel (pass --wheel)" ;;
  esac
fi
log "base $BASE -> $ONTO"

{
  echo "# series nightly: $BASE -> $ONTO"
  echo
  echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "- upstream: $REMOTE, target $ONTO ($(git rev-parse --short=12 "$ONTO^{commit}" 2>/dev/null || echo '?'))"
} > "$REPORT"

# --- does the series still apply? ---------------------------------------------------------------
if [ "$ONTO" != "$BASE" ]; then
  # --bisect: each conflicting topic's report names the first upstream commit (and PR)
  # on the target's first-parent line at which it stopped applying
  $SERIES rebase --onto "$ONTO" --dry-run --bisect ${STRICT[@]+"${STRICT[@]}"} \
    > "$OUT/rebase-dry-run.txt" 2> "$OUT/rebase-dry-run.err"
  rc=$?
  if [ $rc -ne 0 ]; then
    what="the series no longer applies"
    grep -q -- '^--strict: .* break(s) count as conflicts' "$OUT/rebase-dry-run.txt" \
      && what="a clean rebase breaks what the topics use (ci.breaks: fail)"
    {
      echo "- result: **$what** (series rebase --dry-run exit $rc)"
      echo
      echo '```'
      cat "$OUT/rebase-dry-run.txt" "$OUT/rebase-dry-run.err"
      echo '```'
    } >> "$REPORT"
    echo "nightly: $what onto $ONTO:" >&2
    cat "$OUT/rebase-dry-run.txt" "$OUT/rebase-dry-run.err" >&2
    awk '/ CONFLICT /{t=$1} /first breaking upstream commit:/{sub(/^ */, ""); print t ": " $0}' \
      "$OUT/rebase-dry-run.txt" > "$OUT/first-breaking.txt"
    while IFS= read -r line; do echo "- $line" >> "$REPORT"; log "$line"; done < "$OUT/first-breaking.txt"
    # whom to mention: the owners of the topics that conflict (owner: in series.yaml, else authors)
    $SERIES rebase --onto "$ONTO" --dry-run --json ${STRICT[@]+"${STRICT[@]}"} > "$OUT/rebase-dry-run.json" 2>/dev/null
    $SERIES ci owners --report "$OUT/rebase-dry-run.json" > "$OUT/owners.txt" 2>/dev/null || : > "$OUT/owners.txt"
    { echo; $SERIES ci report --rebase "$OUT/rebase-dry-run.json" --onto "$ONTO" | sed 1,2d; } >> "$REPORT" 2>/dev/null || true
    [ $rc -eq 3 ] && exit 3
    exit 1
  fi
  log "clean: rebasing for real"
  $SERIES rebase --onto "$ONTO" --json ${STRICT[@]+"${STRICT[@]}"} > "$OUT/rebase.json" \
    || { log "series rebase failed"; exit 1; }
  REBASED=(--rebase "$OUT/rebase.json")   # its breaks (warnings) go in report.md's table
  n=$(json "$OUT/rebase.json" "sum(len(t.get('breaks', [])) for t in d.get('topics', []))")
  warned=""
  [ "$n" != 0 ] && warned=", **$n break(s)** (warnings, ci.breaks is warn: see below)"
  { echo "- rebase: clean onto $ONTO$warned"; echo; echo '```'; cat "$OUT/rebase-dry-run.txt"; echo '```'; } >> "$REPORT"
else
  echo "- rebase: already on $ONTO" >> "$REPORT"
fi

# --- the patched wheel ---------------------------------------------------------------------------
if [ "$WHEEL" != none ]; then
  $SERIES build --wheel "$WHEEL" --out "$OUT" --json > "$OUT/build.json" || { log "series build failed"; exit 1; }
  WHEEL_PATH=$(json "$OUT/build.json" "d['wheel']")
  MANIFEST=$(json "$OUT/build.json" "d['manifest']")
  SHA=$(json "$MANIFEST" "d['wheel']['sha256']")
  echo "- wheel: \`$(basename "$WHEEL_PATH")\` (sha256 $SHA), manifest \`$(basename "$MANIFEST")\`" >> "$REPORT"
else
  $SERIES build --json > "$OUT/build.json" || { log "series build failed"; exit 1; }
  echo "- wheel: not built (no release wheel for $ONTO)" >> "$REPORT"
fi

# --- upstream tests that cover the series ----------------------------------------------------------
$SERIES test > "$OUT/tests.txt" || { log "series test failed"; exit 1; }
case "$FORMAT" in
  github-matrix) STEPS="$OUT/ci-steps.json" ;;
  buildkite) STEPS="$OUT/ci-steps.yml" ;;
  *) log "unknown --format $FORMAT"; exit 2 ;;
esac
$SERIES test --format "$FORMAT" ${STEPS_ARGS[@]+"${STEPS_ARGS[@]}"} > "$STEPS" || { log "series test --format failed"; exit 1; }
# tables, a <details> block per topic, a Mermaid picture of topics x directories, the steps
{ echo; $SERIES ci report --build "$OUT/build.json" ${REBASED[@]+"${REBASED[@]}"} --onto "$ONTO" | sed 1,2d; } >> "$REPORT" \
  || { log "series ci report failed"; exit 1; }
log "report: $REPORT"
[ "$WHEEL" != none ] && echo "$WHEEL_PATH"
exit 0
