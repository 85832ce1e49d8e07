#!/bin/sh
# storm.sh: build your own MCP server, storm it with a deploy and a client
# drop on stormsim's live engine, check the thresholds of storm.toml (lost
# events, 404s, duplicates, leaks), compare with the committed baseline
# (baseline/own-server.live.json, over the seeds), and write JUnit.
#
#   examples/ci/storm.sh                 # exit 0 pass, 99 a threshold failed, 1 the baseline moved, 97 no verdict (host saturated)
#   examples/ci/storm.sh --seeds 1       # any further flags go to stormsim nightly
#   examples/ci/storm.sh --baseline      # record baseline/own-server.live.json (and CHANGES.md) instead; commit them
#
# Environment: OUT (default results/ci) gets junit.xml, report.html and the
# run's folder; SERVER_BUILD is the command that builds the server to
# examples/ci/bin/server (default: go build ./examples/byo-server);
# STORMSIM is a stormsim binary to use instead of building one.
# The live engine starts its own redis-server from PATH for the Redis
# designs; this scenario's design (memory-sticky) needs none.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
OUT=${OUT:-results/ci}
mkdir -p "$here/bin"
if [ -z "${STORMSIM:-}" ]; then
	go build -o "$here/bin/stormsim" ./cmd/stormsim
	STORMSIM=$here/bin/stormsim
fi
${SERVER_BUILD:-go build -o "$here/bin/server" ./examples/byo-server}

if [ "${1:-}" = "--baseline" ]; then
	shift
	exec "$STORMSIM" baseline --file "$here/storm.toml" --dir "$here/baseline" "$@"
fi

status=0
"$STORMSIM" nightly --file "$here/storm.toml" --baselines "$here/baseline" --out "$OUT" "$@" || status=$?
run=$(ls -1d "$OUT"/[0-9]*-[0-9]*-[0-9]*/ 2>/dev/null | sort | tail -n 1)
if [ -n "$run" ] && [ -f "$run/junit.xml" ]; then
	cp "$run/junit.xml" "$OUT/junit.xml"
	cp "$run/own-server/report.html" "$OUT/report.html" 2>/dev/null || true
	echo "storm.sh: $OUT/junit.xml, $OUT/report.html (exit $status)"
else
	echo "storm.sh: stormsim nightly wrote no junit.xml (exit $status)" >&2
	[ "$status" -ne 0 ] || status=1
fi
exit "$status"
