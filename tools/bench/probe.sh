#!/usr/bin/env bash
# The probe-rs path against the gdb-remote backend on the same QEMU (docs/BENCHMARKS.md):
# allocation events traced per second on the churn firmware, and the time of one heap walk, each
# with `--qemu netduinoplus2` (memlife's GDB remote client) and with
# `--chip STM32F405RGTx --probe qemu` (probe-rs over memlife's virtual SWD probe over the same
# gdbstub). Also the cost of one stop and resume with tracing off: STOPS entries of churn_round,
# and the events per second of a whole scripts/lifecycle.rhai audit of the healthy firmware
# (start-up included; through probe-rs it arms at most the STM32F4's 6 comparators).
#
#   tools/bench/probe.sh [ROUNDS] [REPEATS] [STOPS]   default 40 rounds, 3 repeats, 200 stops
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-40}
REPEATS=${2:-3}
STOPS=${3:-200}

make -s -C firmware bench
make -s -C firmware
cargo build --release --locked -q -p memlife
MEMLIFE=target/release/memlife
cfg=$(mktemp --suffix=.toml)
wcfg=$(mktemp --suffix=.toml)
scfg=$(mktemp --suffix=.toml)
out=$(mktemp -d)
trap 'rm -rf "$cfg" "$wcfg" "$scfg" "$out"' EXIT
printf '[budgets]\nrounds = %s\n[trace]\nmethod = "trace"\nskip = ["mem_alloc", "mem_free"]\n' "$ROUNDS" > "$cfg"
printf '[budgets]\nwalks = 20\n' > "$wcfg"
printf '[budgets]\nstops = %s\n' "$STOPS" > "$scfg"
PROBE=(--chip STM32F405RGTx --probe qemu)
GDB=(--qemu netduinoplus2)

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
now() { date +%s.%N; }

trace_rate() { # $1 = elf, rest = backend flags
  local elf=$1; shift
  "$MEMLIFE" audit --config "$cfg" --elf "$elf" "$@" tools/bench/memlife_trace.rhai |
    sed -nE 's/.*MEMLIFE-TRACE events=([0-9]+) seconds=([0-9.]+).*/\1 \2/p' |
    awk '{ printf "%.1f\n", $1 / $2 }'
}
walk_ms() { # $1 = elf, rest = backend flags
  local elf=$1; shift
  "$MEMLIFE" audit --config "$wcfg" --elf "$elf" "$@" tools/bench/memlife_walk.rhai |
    sed -nE 's/.*MEMLIFE-WALK walks=([0-9]+) seconds=([0-9.]+).*/\1 \2/p' |
    awk '{ printf "%.2f\n", 1000 * $2 / $1 }'
}
stop_ms() { # $1 = elf, rest = backend flags
  local elf=$1; shift
  "$MEMLIFE" audit --config "$scfg" --elf "$elf" "$@" tools/bench/memlife_stops.rhai |
    sed -nE 's/.*MEMLIFE-STOPS stops=([0-9]+) seconds=([0-9.]+).*/\1 \2/p' |
    awk '{ printf "%.2f\n", 1000 * $2 / $1 }'
}

lifecycle_rate() { # $1 = elf, rest = backend flags; events over the report's run.seconds
  local elf=$1; shift
  local events seconds
  events=$("$MEMLIFE" audit --config examples/healthy/memlife.toml --elf "$elf" --out "$out" \
    --json "$out/lifecycle.json" "$@" scripts/lifecycle.rhai |
    sed -nE 's/.*phases, ([0-9]+) allocation events.*/\1/p')
  seconds=$(sed -nE 's/^    "seconds": ([0-9.]+),?$/\1/p' "$out/lifecycle.json" | head -1)
  awk -v e="$events" -v s="$seconds" 'BEGIN { printf "%.1f\n", e / s }'
}

printf '%-6s %-26s %10s %s\n' alloc measure median "each run"
for alloc in heap4 nano; do
  churn=firmware/build/$alloc-churn.elf
  healthy=firmware/build/$alloc-healthy.elf
  for backend in gdb probe; do
    if [ $backend = gdb ]; then flags=("${GDB[@]}"); label="gdb-remote"; else flags=("${PROBE[@]}"); label="probe-rs"; fi
    t=(); w=(); s=(); l=()
    for _ in $(seq "$REPEATS"); do
      t+=("$(trace_rate "$churn" "${flags[@]}")")
      l+=("$(lifecycle_rate "$healthy" "${flags[@]}")")
      w+=("$(walk_ms "$healthy" "${flags[@]}")")
      s+=("$(stop_ms "$churn" "${flags[@]}")")
    done
    printf '%-6s %-26s %10s %s\n' "$alloc" "events/s, $label" "$(printf '%s\n' "${t[@]}" | median)" "${t[*]}"
    printf '%-6s %-26s %10s %s\n' "$alloc" "lifecycle events/s, $label" "$(printf '%s\n' "${l[@]}" | median)" "${l[*]}"
    printf '%-6s %-26s %10s %s\n' "$alloc" "ms per walk, $label" "$(printf '%s\n' "${w[@]}" | median)" "${w[*]}"
    printf '%-6s %-26s %10s %s\n' "$alloc" "ms per stop, $label" "$(printf '%s\n' "${s[@]}" | median)" "${s[*]}"
  done
done
