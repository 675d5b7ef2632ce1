#!/usr/bin/env bash
# `make demo`: run the bundled firmware on an emulated STM32F405 and look at its heap with memlife.
set -euo pipefail
cd "$(dirname "$0")/.."
MEMLIFE=target/debug/memlife
MACHINE=${QEMU_MACHINE:-netduinoplus2}

echo "== 1. The healthy firmware runs 3 full lifecycles on QEMU ($MACHINE) and exits"
make -s -C firmware ITERATIONS=3 >/dev/null
for alloc in heap4 nano; do
  elf=firmware/build/iter3/$alloc-healthy.elf
  timeout 60 qemu-system-arm -M "$MACHINE" -display none -monitor none -serial null \
    -semihosting-config enable=on,target=native -kernel "$elf"
  echo "   $elf exited with status $?"
done

for alloc in heap4 nano; do
  echo
  echo "== 2. memlife stops $alloc-healthy at the 2nd model_release and walks its heap"
  echo "   $MEMLIFE heap --elf firmware/build/$alloc-healthy.elf --qemu $MACHINE --at model_release --hit 2"
  "$MEMLIFE" heap --elf "firmware/build/$alloc-healthy.elf" --qemu "$MACHINE" --at model_release --hit 2 \
    | grep -v '^  0x' || true
done

echo
echo "== 3. The leak: free bytes at model_release, hits 2 and 6, on heap4-leak-on-switch"
for hit in 2 6; do
  "$MEMLIFE" heap --elf firmware/build/heap4-leak-on-switch.elf --qemu "$MACHINE" --at model_release --hit "$hit" | tail -1
done
echo
echo "Next: memlife symbols --elf firmware/build/heap4-healthy.elf; memlife heap --help"
