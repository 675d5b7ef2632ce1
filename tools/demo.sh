#!/usr/bin/env bash
# `make demo`: the bundled firmware on an emulated STM32F405 (QEMU netduinoplus2), audited by
# memlife with scripts/lifecycle.rhai: the healthy build and each of the seed's faulty cases in one
# wide run (examples/scenarios.toml, two at a time), each with its HTML report and Perfetto trace;
# then one `memlife diff` (healthy vs leak-on-switch).
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

echo "== memlife audit scripts/lifecycle.rhai on every scenario, 2 at a time (examples/scenarios.toml)"
status=0
"$MEMLIFE" audit --config examples/scenarios.toml -j 2 --expect --out "$OUT" 2>/dev/null | sed 's/^/   /'
code=${PIPESTATUS[0]}
if [ "$code" = 0 ]; then verdict="every verdict as expected"; else verdict="UNEXPECTED"; status=1; fi
echo "   exit $code: $verdict"
echo "   the checks that failed, per scenario ($OUT/NAME/stdout.txt):"
for ex in healthy load-peak reorder branch-peak leak-on-switch fragmentation overlap; do
  grep -E '^FAIL ' "$OUT/$ex/stdout.txt" 2>/dev/null | cut -c1-110 | sed "s/^/   $ex: /"
done
echo
echo "== memlife diff: the healthy build against leak-on-switch (budgets: examples/diff/memlife.toml)"
"$MEMLIFE" diff --config examples/diff/memlife.toml "$OUT/healthy/audit.json" "$OUT/leak-on-switch/audit.json" \
  --markdown "$OUT/diff.md" --report "$OUT/diff" 2>/dev/null | sed 's/^/   /'
code=${PIPESTATUS[0]}
if [ "$code" = 1 ]; then verdict="as expected"; else verdict="UNEXPECTED (expected 1)"; status=1; fi
echo "   exit $code: $verdict (examples/diff/run.sh compares every faulty build)"
echo
echo "== Reports (open in a browser; the traces in ui.perfetto.dev)"
for ex in healthy load-peak reorder branch-peak leak-on-switch fragmentation overlap; do
  printf '   %-15s %s   trace %s\n' "$ex" "$(realpath "$OUT/$ex/report/index.html")" "$OUT/$ex/trace.json"
done
printf '   %-15s %s   markdown %s\n' "diff" "$(realpath "$OUT/diff/index.html")" "$OUT/diff.md"
echo "Per scenario: $OUT/NAME/audit.json and junit.xml; all: $OUT/junit.xml, $OUT/summary.json. Next: memlife audit --help, memlife diff --help, scripts/README.md"
exit $status
