#!/usr/bin/env bash
# Tracing against the link's floors (docs/BENCHMARKS.md): bare RSP loops (tools/bench/rsp_floor.py)
# and memlife tracing the heap4 churn firmware, each on its own QEMU, in one run. memlife runs
# twice per repeat: one stop per allocation (`[trace] requests = false`, its default when nothing
# reads the size asked) and with the requested sizes read (`requests = true`: a second stop at
# the allocator's entry); each prints its allocator stops per event (from the JSON's run.stops).
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
# churn.toml ends with [trace]: the key appended here belongs to it.
one_stop=$(mktemp --suffix=.toml)
two_stops=$(mktemp --suffix=.toml)
json=$(mktemp --suffix=.json)
printf '%s\nrequests = false\n' "$(cat tools/bench/churn.toml)" > "$one_stop"
printf '%s\nrequests = true\n' "$(cat tools/bench/churn.toml)" > "$two_stops"
rounds=$(awk -F' *= *' '$1 == "rounds" { print $2 }' tools/bench/churn.toml)
trap 'rm -f "$one_stop" "$two_stops" "$json"; [ -n "${qpid:-}" ] && kill "$qpid" 2>/dev/null || true' EXIT

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

# memlife tracing with the settings $1: "EVENTS_PER_S ALLOCATOR_STOPS_PER_EVENT" (the run_to
# stops at churn_round, one per round and the untimed first, are not the allocator's).
memlife_trace() {
  local rate
  rate=$("$MEMLIFE" audit --config "$1" --elf "$elf" --gdb "127.0.0.1:$port" --json "$json" \
    tools/bench/memlife_trace.rhai | grep MEMLIFE-TRACE |
    sed -E 's/.*events=([0-9]+) seconds=([0-9.]+).*/\1 \2/' | awk '{ printf "%.0f", $1 / $2 }')
  python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(sys.argv[2], "%.2f" % ((r["run"]["stops"] - int(sys.argv[3]) - 1) / r["totals"]["events"]))' \
    "$json" "$rate" "$rounds"
}

declare -A runs per_event
modes=(floor step memlife pair)
for _ in $(seq "$REPEATS"); do
  for mode in "${modes[@]}"; do
    start_qemu
    runs[$mode]+="$(python3 tools/bench/rsp_floor.py "$port" "$mode" "$malloc" "$SECONDS_PER" |
      sed -E 's/.*stops=([0-9]+) seconds=([0-9.]+).*/\1 \2/' | awk '{ printf "%.0f ", $1 / $2 }')"
    stop_qemu
  done
  for trace in trace trace+requests; do
    cfg=$one_stop
    [ "$trace" = trace+requests ] && cfg=$two_stops
    start_qemu
    read -r rate stops < <(memlife_trace "$cfg")
    runs[$trace]+="$rate "
    per_event[$trace]+="$stops "
    stop_qemu
  done
done
trace_median=$(echo "${runs[trace]}" | tr ' ' '\n' | grep . | median)
printf '%-34s %8s %8s  %s\n' loop median "memlife/" "per second, each run"
for mode in "${modes[@]}" trace trace+requests; do
  m=$(echo "${runs[$mode]}" | tr ' ' '\n' | grep . | median)
  printf '%-34s %8s %8.2f  %s\n' "$mode" "$m" "$(echo "$trace_median / $m" | bc -l)" "${runs[$mode]}"
done
for trace in trace trace+requests; do
  echo "$trace: allocator stops per event, each run: ${per_event[$trace]}"
done
echo "(floor, step, memlife, pair: stops/s; trace: memlife's events/s with one stop per allocation;"
echo " trace+requests: with the requested sizes read; memlife/ = trace / that row)"
