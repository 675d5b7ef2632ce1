#!/usr/bin/env bash
# Tracing against the link's floors (docs/BENCHMARKS.md): bare RSP loops (tools/bench/rsp_floor.py)
# and memlife tracing the heap4 churn firmware, each on its own QEMU, in one run.
#
#   tools/bench/floors.sh [REPEATS] [SECONDS]   default 5 repeats of 3 s per loop, 60 rounds
#
# The machine is shared: every run's figure is printed after the median.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEATS=${1:-5}
SECONDS_PER=${2:-3}
QEMU_FLAGS=(-M netduinoplus2 -accel tcg,thread=single -display none -monitor none -serial null)
elf=firmware/build/heap4-churn.elf

make -s -C firmware bench
# probe-rs plays no part in a QEMU benchmark.
cargo build --release --locked -q -p memlife --no-default-features
MEMLIFE=target/release/memlife
malloc=0x$(arm-none-eabi-nm "$elf" | awk '$3 == "pvPortMalloc" { print $1 }')
trap '[ -n "${qpid:-}" ] && kill "$qpid" 2>/dev/null || true' EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_qemu() {
  port=$(free_port)
  qemu-system-arm "${QEMU_FLAGS[@]}" -S -gdb "tcp:127.0.0.1:$port" -kernel "$elf" 2>/dev/null &
  qpid=$!
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
  sleep 0.2 # the probe above held QEMU's one gdb connection slot for a moment
}
stop_qemu() { kill "$qpid" 2>/dev/null || true; wait "$qpid" 2>/dev/null || true; qpid=; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

declare -A runs
modes=(floor step memlife pair)
for _ in $(seq "$REPEATS"); do
  for mode in "${modes[@]}"; do
    start_qemu
    runs[$mode]+="$(python3 tools/bench/rsp_floor.py "$port" "$mode" "$malloc" "$SECONDS_PER" |
      sed -E 's/.*stops=([0-9]+) seconds=([0-9.]+).*/\1 \2/' | awk '{ printf "%.0f ", $1 / $2 }')"
    stop_qemu
  done
  start_qemu
  runs[trace]+="$("$MEMLIFE" audit --config tools/bench/churn.toml --elf "$elf" --gdb "127.0.0.1:$port" \
    tools/bench/memlife_trace.rhai | grep MEMLIFE-TRACE |
    sed -E 's/.*events=([0-9]+) seconds=([0-9.]+).*/\1 \2/' | awk '{ printf "%.0f ", $1 / $2 }')"
  stop_qemu
done
floor=$(echo "${runs[floor]}" | tr ' ' '\n' | grep . | median)
printf '%-34s %8s %8s  %s\n' loop median "memlife/" "per second, each run"
for mode in "${modes[@]}" trace; do
  m=$(echo "${runs[$mode]}" | tr ' ' '\n' | grep . | median)
  printf '%-34s %8s %8.2f  %s\n' "$mode" "$m" "$(echo "$(echo "${runs[trace]}" | tr ' ' '\n' | grep . | median) / $m" | bc -l)" "${runs[$mode]}"
done
echo "(floor, step, memlife, pair: stops/s; trace: memlife's events/s; memlife/ = trace / that row)"
