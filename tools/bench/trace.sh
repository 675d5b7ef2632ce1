#!/usr/bin/env bash
# Tracing benchmark (docs/BENCHMARKS.md): allocation events traced per second on the churn
# firmware in QEMU, by memlife and by gdb-multiarch driven by a Python breakpoint loop doing the
# same work (size or pointer, caller, block header per event), side by side in one run.
#
#   tools/bench/trace.sh [ROUNDS] [REPEATS]   default 40 rounds of 32 events, 3 repeats
#
# Each run gets its own QEMU with the same flags, started and killed by pid here. The machine
# has two cores shared by QEMU, the tracer and everything else, so single runs vary by +-30%:
# the table gives the median of the repeats.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-40}
REPEATS=${2:-3}
QEMU_FLAGS=(-M netduinoplus2 -accel tcg,thread=single -display none -monitor none -serial null)

make -s -C firmware bench
cargo build --release --locked -q -p memlife
MEMLIFE=target/release/memlife
cfg=$(mktemp --suffix=.toml)
requests_cfg=$(mktemp --suffix=.toml)
trap 'rm -f "$cfg" "$requests_cfg"; [ -n "${qpid:-}" ] && kill "$qpid" 2>/dev/null || true' EXIT
# memlife_trace.rhai reads no requested size: one stop per allocation; `requests = true` reads
# them too (a second stop, at the allocator's entry), as gdb's loop does.
printf '[budgets]\nrounds = %s\n[trace]\nmethod = "trace"\nskip = ["mem_alloc", "mem_free"]\n' "$ROUNDS" > "$cfg"
printf '%s\nrequests = true\n' "$(cat "$cfg")" > "$requests_cfg"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start_qemu() {
  port=$(free_port)
  qemu-system-arm "${QEMU_FLAGS[@]}" -S -gdb "tcp:127.0.0.1:$port" -kernel "$1" &
  qpid=$!
  for _ in $(seq 50); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done
}
# The probe above took QEMU's one gdb connection slot for a moment; give it back.
settle() { sleep 0.2; }
stop_qemu() { kill "$qpid" 2>/dev/null || true; wait "$qpid" 2>/dev/null || true; qpid=; }

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
rate() { sed -E 's/.*events=([0-9]+) seconds=([0-9.]+).*/\1 \2/' | awk '{ printf "%.1f\n", $1 / $2 }'; }

gdb_run() { # $1 = backtrace depth
  start_qemu "$elf"; settle
  gdb-multiarch -batch -nx -ex "set pagination off" -ex "target remote 127.0.0.1:$port" \
    -ex "python ROUNDS = $ROUNDS; MALLOC = \"$m\"; FREE = \"$f\"; SIZE_ARG = 0; PTR_ARG = 0; BACKTRACE = $1" \
    -ex "source tools/bench/gdb_trace.py" "$elf" 2>/dev/null | grep GDB-TRACE | rate
  stop_qemu
}

printf '%-6s %-22s %7s %s\n' alloc tool median "events/s of each run"
for alloc in heap4 nano; do
  elf=firmware/build/$alloc-churn.elf
  # gdb breaks on the public entries: a finish from _malloc_r, reached by a tail call, never fires.
  if [ "$alloc" = heap4 ]; then m=pvPortMalloc; f=vPortFree; else m=malloc; f=free; fi
  g_rates=(); l_rates=(); m_rates=(); r_rates=()
  for _ in $(seq "$REPEATS"); do
    g_rates+=("$(gdb_run 8)")
    l_rates+=("$(gdb_run 0)")
    start_qemu "$elf"; settle
    m_rates+=("$("$MEMLIFE" audit --config "$cfg" --elf "$elf" --gdb "127.0.0.1:$port" \
      tools/bench/memlife_trace.rhai | grep MEMLIFE-TRACE | rate)")
    stop_qemu
    start_qemu "$elf"; settle
    r_rates+=("$("$MEMLIFE" audit --config "$requests_cfg" --elf "$elf" --gdb "127.0.0.1:$port" \
      tools/bench/memlife_trace.rhai | grep MEMLIFE-TRACE | rate)")
    stop_qemu
  done
  gm=$(printf '%s\n' "${g_rates[@]}" | median); lm=$(printf '%s\n' "${l_rates[@]}" | median)
  mm=$(printf '%s\n' "${m_rates[@]}" | median); rm_=$(printf '%s\n' "${r_rates[@]}" | median)
  printf '%-6s %-22s %7s %s\n' "$alloc" "gdb, same work" "$gm" "${g_rates[*]}"
  printf '%-6s %-22s %7s %s\n' "$alloc" "gdb, caller pc only" "$lm" "${l_rates[*]}"
  printf '%-6s %-22s %7s %s   (%.1fx gdb same work, %.1fx gdb caller only)\n' "$alloc" \
    "memlife, requests read" "$rm_" "${r_rates[*]}" "$(echo "$rm_ / $gm" | bc -l)" "$(echo "$rm_ / $lm" | bc -l)"
  printf '%-6s %-22s %7s %s   (%.1fx gdb same work, %.1fx gdb caller only)\n' "$alloc" \
    "memlife, one stop" "$mm" "${m_rates[*]}" "$(echo "$mm / $gm" | bc -l)" "$(echo "$mm / $lm" | bc -l)"
done
