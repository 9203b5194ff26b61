#!/bin/bash
# A blobless clone (git clone --filter=blob:none) of the 23-topic bench fork next to a full
# copy: series status and rebase --dry-run, their times, how many blobs series fetched, and
# whether the answers are identical. Usage: PYTHON=/path/to/venv/python tools/bench_partial_clone.sh
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYBIN=${PYTHON:-python3}
W=$(mktemp -d); trap "rm -rf $W" EXIT
export HOME=$W GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=B GIT_AUTHOR_EMAIL=b@x GIT_COMMITTER_NAME=B GIT_COMMITTER_EMAIL=b@x
cp -a /tmp/bench/fork $W/full
git clone -q --bare /tmp/bench/fork $W/fork.git
git -C $W/fork.git config uploadpack.allowFilter true
git clone -q --no-checkout --filter=blob:none -o upstream file://$W/fork.git $W/part
cd $W/part
for b in $(cat /tmp/bench/fork/.git/series-fixture.txt); do git branch -q "$b" "upstream/$b"; git update-ref -d "refs/remotes/upstream/$b"; done
echo "missing before: $(git rev-list --objects --missing=print --all | grep -c '^?')"
PY="env PYTHONPATH=$ROOT $PYBIN -m series"
$PY init --base v0.30.0 --remote upstream > /dev/null
(cd $W/full && $PY init --base v0.30.0 --remote upstream > /dev/null)
cmp series.yaml $W/full/series.yaml && echo "series.yaml: identical"
/usr/bin/time -f "partial status %e s" $PY status > $W/part.status
echo "missing after status: $(git rev-list --objects --missing=print --all | grep -c '^?')"
cd $W/full; /usr/bin/time -f "full status %e s" $PY status > $W/full.status
cd $W/part; /usr/bin/time -f "partial rebase --dry-run %e s" $PY rebase --onto v0.31.0 --dry-run > $W/part.rebase || true
echo "missing after rebase: $(git rev-list --objects --missing=print --all | grep -c '^?')"
cd $W/full; /usr/bin/time -f "full rebase --dry-run %e s" $PY rebase --onto v0.31.0 --dry-run > $W/full.rebase || true
diff <(sed 's/report: .*//; s/dry-run-[0-9TZ]*//' $W/part.status) <(sed 's/report: .*//; s/dry-run-[0-9TZ]*//' $W/full.status) && echo "status: identical"
diff <(grep -v "report:" $W/part.rebase | sed -E "s/[0-9a-f]{12}//g" | sort) <(grep -v "report:" $W/full.rebase | sed -E "s/[0-9a-f]{12}//g" | sort) && echo "rebase --dry-run: identical"
head -3 $W/full.rebase
