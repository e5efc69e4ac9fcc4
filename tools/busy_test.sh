#!/usr/bin/env bash
# `make test` beside a CPU hog on every core (issue 45: tests must pass on a busy machine), with the load
# average logged each minute, each failure written to failures.log as it happens, every test's duration listed
# (where the suite's time goes), and the wall time at the end.
#   bash tools/busy_test.sh [OUT_DIR]      # default test-results/busy-<time>; needs Debian's stress-ng
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-test-results/busy-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
command -v stress-ng >/dev/null || { echo "stress-ng is missing: apt-get install -y stress-ng"; exit 2; }
( while true; do echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 60; done ) >"$out/load.log" 2>&1 &
logger=$!
stress-ng --cpu 4 --timeout 0 >"$out/stress.log" 2>&1 &
hog=$!
trap 'kill $hog $logger 2>/dev/null' EXIT
start=$(date +%s)
echo "start $(date -u +%FT%TZ) $(git rev-parse --short HEAD)" >"$out/summary"
PYTEST_FAILURE_LOG="$(cd "$out" && pwd)/failures.log" PYTEST_ADDOPTS="-v -v" make test DURATIONS=0 >"$out/test.log" 2>&1
rc=$?
echo "end $(date -u +%FT%TZ) rc=$rc wall=$(($(date +%s) - start))s" >>"$out/summary"
cat "$out/summary"
grep -E "^(FAILED|ERROR) |=+ .* in [0-9.]+s" "$out/test.log" || true
exit $rc
