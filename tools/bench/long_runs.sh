#!/usr/bin/env bash
# Long runs (docs/BENCHMARKS.md): memlife's peak resident memory and the size of its outputs
# (audit JSON, trace, HTML report) over N traced lifecycles of the leak-on-switch firmware with
# scripts/leak.rhai, so that growth per lifecycle is a measured figure.
#
#   tools/bench/long_runs.sh [N...]   default 10 100
#
# Needs GNU time (/usr/bin/time, Debian package `time`) for the peak RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(10 100)
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }

make -s -C firmware >/dev/null
# probe-rs plays no part in a QEMU benchmark.
cargo build --release --locked -q -p memlife --no-default-features
MEMLIFE=target/release/memlife
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "leak-on-switch (heap4), scripts/leak.rhai, every lifecycle traced; $(nproc) cores, $(date -u +%F)"
printf '%-8s %8s %8s %12s %12s %12s %12s\n' cycles events "wall s" "peak RSS KB" "JSON B" "trace B" "report B"
for n in "${COUNTS[@]}"; do
  dir="$OUT/n$n"
  mkdir -p "$dir"
  code=0
  /usr/bin/time -f '%e %M' -o "$dir/time" "$MEMLIFE" audit scripts/leak.rhai \
    --config examples/leak-on-switch/memlife.toml --budget "cycles=$n" --budget more_cycles=0 \
    --json "$dir/audit.json" --trace "$dir/trace.json" --report "$dir/report" \
    >"$dir/stdout" 2>"$dir/stderr" || code=$?
  # leak.rhai fails on this firmware (exit 1): that is its finding. 2 is a tool error.
  [ "$code" -le 1 ] || { cat "$dir/stderr"; exit 1; }
  events=$(grep -o '[0-9]* allocation events' "$dir/stdout" | cut -d' ' -f1)
  # GNU time writes "Command exited with non-zero status 1" first when the audit fails.
  read -r secs rss < <(tail -n 1 "$dir/time")
  printf '%-8s %8s %8s %12s %12s %12s %12s\n' "$n" "$events" "$secs" "$rss" \
    "$(stat -c %s "$dir/audit.json")" "$(stat -c %s "$dir/trace.json")" "$(du -sb "$dir/report" | cut -f1)"
done
