#!/usr/bin/env bash
# examples/diff: audits the healthy build twice and three faulty builds once (heap4, QEMU), then
# compares each with the first healthy run: the table on the terminal, markdown and an HTML
# report per comparison in $OUT, and the exit codes checked against the expected ones.
# Run from anywhere: bash examples/diff/run.sh (after `make -C firmware` and `cargo build`).
set -uo pipefail
cd "$(dirname "$0")/../.."
MEMLIFE=${MEMLIFE:-target/debug/memlife}
OUT=${OUT:-out/diff}
mkdir -p "$OUT"

audit() { # name example
  "$MEMLIFE" audit --config "examples/$2/memlife.toml" scripts/lifecycle.rhai \
    --json "$OUT/$1.json" --out "$OUT/files" >/dev/null 2>&1
  case $? in 0|1) ;; *) echo "audit of $2 failed"; exit 2 ;; esac
}
audit healthy healthy
audit healthy-again healthy
for ex in reorder branch-peak leak-on-switch; do audit "$ex" "$ex"; done

status=0
for pair in "healthy-again 0" "reorder 1" "branch-peak 1" "leak-on-switch 1"; do
  set -- $pair
  echo "== healthy vs $1"
  "$MEMLIFE" diff --config examples/diff/memlife.toml "$OUT/healthy.json" "$OUT/$1.json" \
    --markdown "$OUT/healthy-vs-$1.md" --json "$OUT/healthy-vs-$1.diff.json" \
    --report "$OUT/healthy-vs-$1" 2>/dev/null
  code=$?
  if [ "$code" = "$2" ]; then echo "   exit $code: as expected"; else echo "   exit $code: UNEXPECTED (expected $2)"; status=1; fi
  echo
done
echo "Reports: $OUT/healthy-vs-*/index.html, markdown: $OUT/healthy-vs-*.md"
exit $status
