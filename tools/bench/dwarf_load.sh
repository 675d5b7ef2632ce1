#!/usr/bin/env bash
# ELF and DWARF load (docs/BENCHMARKS.md): `memlife symbols` against gdb-multiarch loading the
# same ELF in batch mode (`-batch -nx FILE`, gdb's lazy default, and with `-readnow`, which
# expands every compile unit as memlife's full load does), on this repository's ELFs, the C++
# firmware and the synthetic ELF of `make -C firmware synthetic` (2,000 compile units).
#
#   tools/bench/dwarf_load.sh [REPEATS] [ELF...]   default 5 repeats over the list below
#
# Wall time and peak resident memory of each; medians, and every run's time.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPEATS=${1:-5}
shift || true
ELFS=("$@")
if [ ${#ELFS[@]} -eq 0 ]; then
  make -s -C firmware >/dev/null
  make -s -C firmware -j"$(nproc)" synthetic >/dev/null
  ELFS=(firmware/build/heap4-healthy.elf firmware/build/nano-healthy.elf
        firmware/build/tlsf-healthy.elf firmware/build/dl-healthy.elf
        firmware/build/cpp-healthy.elf firmware/build/synthetic.elf)
fi
cargo build --release --locked -q -p memlife --no-default-features
MEMLIFE=target/release/memlife
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# One tool on one ELF: "median_ms median_rss_mib | each run's ms" (wall time from date, peak
# resident memory from GNU time).
measure() {
  local times="" rss="" log t0 t1 m
  log=$(mktemp)
  for _ in $(seq "$REPEATS"); do
    t0=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$log" "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; rm -f "$log"; return 1; }
    t1=$(date +%s%N)
    read -r m <"$log"
    times+="$(( (t1 - t0) / 1000000 )) "
    rss+="$(( m / 1024 )) "
  done
  rm -f "$log"
  echo "$(echo "$times" | tr ' ' '\n' | grep . | median) $(echo "$rss" | tr ' ' '\n' | grep . | median) | $times"
}

echo "$(nproc) cores, $(date -u +%F), $(gdb-multiarch --version | head -1)"
printf '| ELF | size | .debug_info | CUs | tool | median ms | peak RSS MiB | runs (ms) |\n|---|---|---|---|---|---|---|---|\n'
for elf in "${ELFS[@]}"; do
  size=$(du -k "$elf" | cut -f1)
  hex=$(arm-none-eabi-readelf -SW "$elf" | sed -n 's/.*\] \.debug_info *PROGBITS *[0-9a-f]* [0-9a-f]* \([0-9a-f]*\).*/\1/p')
  info=$(( 16#${hex:-0} / 1024 ))
  cus=$(arm-none-eabi-readelf --debug-dump=info "$elf" 2>/dev/null | grep -c 'Compilation Unit @' || true)
  row() { printf '| %s | %s KiB | %s KiB | %s | %s | %s | %s | %s |\n' "$(basename "$elf")" "$size" "$info" "$cus" "$1" "$2" "$3" "$4"; }
  read -r t m _ runs <<<"$(measure "$MEMLIFE" symbols --elf "$elf")"
  row "memlife symbols" "$t" "$m" "$runs"
  read -r t m _ runs <<<"$(measure gdb-multiarch -batch -nx "$elf")"
  row "gdb -batch" "$t" "$m" "$runs"
  read -r t m _ runs <<<"$(measure gdb-multiarch -batch -nx -readnow "$elf")"
  row "gdb -batch -readnow" "$t" "$m" "$runs"
done
