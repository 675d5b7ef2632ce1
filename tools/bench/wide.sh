#!/usr/bin/env bash
# Wide runs (docs/BENCHMARKS.md): wall time of `memlife audit` over every bundled scenario
# (examples/scenarios.toml, each target its own memlife and QEMU) at -j 1 and -j 2.
#
#   tools/bench/wide.sh [REPEATS] [JOBS...]   default 3 repeats of -j 1 and -j 2
#
# The machine is shared: every run's figure is printed after the median.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEATS=${1:-3}
shift || true
JOBS=("$@")
[ ${#JOBS[@]} -gt 0 ] || JOBS=(1 2)

make -s -C firmware >/dev/null
# probe-rs plays no part in a QEMU benchmark.
cargo build --release --locked -q -p memlife --no-default-features
MEMLIFE=target/release/memlife
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

targets=$(grep -c '^\[\[matrix\]\]' examples/scenarios.toml)
echo "$targets targets (examples/scenarios.toml), $(nproc) cores, $(date -u +%F)"
printf '%-6s %10s %10s  %s\n' jobs "median s" "targets/s" "each run (s)"
for j in "${JOBS[@]}"; do
  runs=""
  for _ in $(seq "$REPEATS"); do
    t0=$(date +%s.%N)
    code=0
    "$MEMLIFE" audit --config examples/scenarios.toml -j "$j" --expect --out "$OUT/j$j" \
      >/dev/null 2>&1 || code=$?
    t1=$(date +%s.%N)
    [ "$code" = 0 ] || { echo "-j $j: exit $code (see $OUT/j$j/summary.json)"; trap - EXIT; exit 1; }
    runs+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f ", b - a }')"
  done
  m=$(echo "$runs" | tr ' ' '\n' | grep . | median)
  printf '%-6s %10s %10s  %s\n' "-j $j" "$m" "$(awk -v n="$targets" -v s="$m" 'BEGIN { printf "%.2f", n / s }')" "$runs"
done
