#!/usr/bin/env bash
# `make demo`: the bundled firmware on an emulated STM32F405 (QEMU netduinoplus2), audited by
# memlife with scripts/lifecycle.rhai: the healthy build, then each of the seed's faulty cases,
# each with its HTML report and Perfetto trace; then one `memlife diff` (healthy vs leak-on-switch).
set -uo pipefail
cd "$(dirname "$0")/.."
MEMLIFE=target/debug/memlife
OUT=${DEMO_OUT:-out/demo}
mkdir -p "$OUT"

echo "== The firmware runs its lifecycle on QEMU (3 iterations, then exits through semihosting)"
make -s -C firmware ITERATIONS=3 >/dev/null
timeout 60 qemu-system-arm -M netduinoplus2 -display none -monitor none -serial null \
  -semihosting-config enable=on,target=native -kernel firmware/build/iter3/heap4-healthy.elf
echo

echo "== memlife stops it at the 2nd model_release and walks the heap"
"$MEMLIFE" heap --elf firmware/build/heap4-healthy.elf --qemu netduinoplus2 --at model_release --hit 2 | grep -v '^  0x'
echo

echo "== memlife audit scripts/lifecycle.rhai on every scenario (heap4 builds; JUnit in $OUT)"
status=0
for ex in healthy load-peak reorder branch-peak leak-on-switch fragmentation overlap; do
  echo "-- $ex: $(sed -n 1p "examples/$ex/memlife.toml" | sed 's/^# [a-z-]*: //')"
  "$MEMLIFE" audit --config "examples/$ex/memlife.toml" scripts/lifecycle.rhai \
    --junit "$OUT/$ex.xml" --json "$OUT/$ex.json" --out "$OUT" \
    --report "$OUT/$ex" --trace "$OUT/$ex.trace.json" 2>&1 \
    | grep -E '^(FAIL|WARN) |rhai: ' | sed 's/^/   /'
  code=${PIPESTATUS[0]}
  expected=$(sed -n 's/^exit = //p' "examples/$ex/memlife.toml")
  if [ "$code" = "$expected" ]; then verdict="as expected"; else verdict="UNEXPECTED (expected $expected)"; status=1; fi
  echo "   exit $code: $verdict"
done
echo
echo "== memlife diff: the healthy build against leak-on-switch (budgets: examples/diff/memlife.toml)"
"$MEMLIFE" diff --config examples/diff/memlife.toml "$OUT/healthy.json" "$OUT/leak-on-switch.json" \
  --markdown "$OUT/diff.md" --report "$OUT/diff" 2>/dev/null | sed 's/^/   /'
code=${PIPESTATUS[0]}
if [ "$code" = 1 ]; then verdict="as expected"; else verdict="UNEXPECTED (expected 1)"; status=1; fi
echo "   exit $code: $verdict (examples/diff/run.sh compares every faulty build)"
echo
echo "== Reports (open in a browser; the traces in ui.perfetto.dev)"
for ex in healthy load-peak reorder branch-peak leak-on-switch fragmentation overlap; do
  printf '   %-15s %s   trace %s\n' "$ex" "$(realpath "$OUT/$ex/index.html")" "$OUT/$ex.trace.json"
done
printf '   %-15s %s   markdown %s\n' "diff" "$(realpath "$OUT/diff/index.html")" "$OUT/diff.md"
echo "JSON: $OUT/*.json, JUnit: $OUT/*.xml. Next: memlife audit --help, memlife diff --help, scripts/README.md"
exit $status
