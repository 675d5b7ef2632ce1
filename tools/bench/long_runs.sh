#!/usr/bin/env bash
# Long runs (docs/BENCHMARKS.md): memlife's peak resident memory and the size of its outputs
# (audit JSON, trace, HTML report) over N traced lifecycles with scripts/leak.rhai, and the
# run's exact totals per lifecycle, so that a long run can be checked against a short one
# scaled.
#
#   tools/bench/long_runs.sh [N...]            default 10 100 1000
#
#   CONFIG=examples/leak-on-switch/memlife.toml  the firmware (default: examples/healthy; the
#                                                leak-on-switch firmware runs out of heap after
#                                                about a hundred switches)
#   KEEP=all                                     --keep-cycles (default: memlife's, 10)
#
# Needs GNU time (/usr/bin/time, Debian package `time`) for the peak RSS.
set -euo pipefail
cd "$(dirname "$0")/../.."
COUNTS=("$@")
[ ${#COUNTS[@]} -gt 0 ] || COUNTS=(10 100 1000)
CONFIG=${CONFIG:-examples/healthy/memlife.toml}
KEEP_ARGS=()
[ -z "${KEEP:-}" ] || KEEP_ARGS=(--keep-cycles "$KEEP")
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (apt-get install time)"; exit 2; }

make -s -C firmware >/dev/null
# probe-rs plays no part in a QEMU benchmark.
cargo build --release --locked -q -p memlife --no-default-features
MEMLIFE=target/release/memlife
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

echo "$CONFIG, scripts/leak.rhai, every lifecycle traced, keep ${KEEP:-default}; $(nproc) cores, $(date -u +%F)"
printf '%-7s %9s %8s %11s %10s %10s %10s %9s %12s %s\n' cycles events "wall s" "peak RSS KB" "JSON B" "trace B" "report B" "ev/cycle" "alloc B/cyc" verdict
for n in "${COUNTS[@]}"; do
  dir="$OUT/n$n"
  mkdir -p "$dir"
  code=0
  /usr/bin/time -f '%e %M' -o "$dir/time" "$MEMLIFE" audit scripts/leak.rhai \
    --config "$CONFIG" --budget "cycles=$n" --budget more_cycles=0 "${KEEP_ARGS[@]}" \
    --json "$dir/audit.json" --trace "$dir/trace.json" --report "$dir/report" \
    >"$dir/stdout" 2>"$dir/stderr" || code=$?
  # leak.rhai fails on a leaking firmware (exit 1): that is its finding. 2 is a tool error.
  [ "$code" -le 1 ] || { tail -n 5 "$dir/stderr"; exit 1; }
  # GNU time writes "Command exited with non-zero status 1" first when the audit fails.
  read -r secs rss < <(tail -n 1 "$dir/time")
  # The run's exact totals (folded cycles included), per lifecycle.
  read -r events per_cycle bytes_per_cycle < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); t = r["totals"]; c = max(r["cycles"], 1)
print(t["events"], round(t["events"] / c, 2), round(t["alloc_bytes"] / c, 1))' "$dir/audit.json")
  verdict=$(grep -E '^(PASS|FAIL) leak' "$dir/stdout" | cut -c1-110)
  printf '%-7s %9s %8s %11s %10s %10s %10s %9s %12s %s\n' "$n" "$events" "$secs" "$rss" \
    "$(stat -c %s "$dir/audit.json")" "$(stat -c %s "$dir/trace.json")" \
    "$(du -sb "$dir/report" | cut -f1)" "$per_cycle" "$bytes_per_cycle" "$verdict"
done
