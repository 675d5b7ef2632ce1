#!/bin/sh
# measure.sh ELF... - run each looping ELF under QEMU halted with a gdbstub,
# attach gdb-multiarch in batch mode, trace 2 lifecycles (tools/heapwalk.py),
# print the log. Usage: tools/measure.sh [-o] build/heap4-healthy.elf ...
#   CMD=phase-trace [-o]: the raw log instead of the summary (-o: per op too)
#   CMD=cpp-summary (tools/cppwalk.py), CMD=tflm-summary (tools/tflmwalk.py): the C++ and
#   TFLM firmwares; ITER=N cycles (default 2)
# PORT (default 3340+) must be free loopback ports; QEMU is killed by PID.
dir=$(cd "$(dirname "$0")" && pwd)
ops=""
if [ "$1" = "-o" ]; then ops="ops"; shift; fi
port=${PORT:-3340}
for elf in "$@"; do
    qemu-system-arm -M netduinoplus2 -display none -monitor none -serial null \
        -semihosting-config enable=on,target=native -kernel "$elf" \
        -S -gdb tcp:127.0.0.1:$port &
    qpid=$!
    sleep 0.3
    echo "== $(basename "$elf" .elf)"
    timeout 120 gdb-multiarch -q -batch -nx "$elf" \
        -ex "target remote 127.0.0.1:$port" \
        -ex "source $dir/heapwalk.py" -ex "source $dir/cppwalk.py" -ex "source $dir/tflmwalk.py" \
        -ex "${CMD:-phase-summary} ${ITER:-2} $ops" 2>&1 | grep -v '^warning\|^$\|Temporary\|^Run till'
    kill "$qpid" 2>/dev/null
    wait "$qpid" 2>/dev/null
    port=$((port + 1))
done
