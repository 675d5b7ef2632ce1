#!/bin/sh
# measure_view.sh ELF... - run each looping ELF under QEMU with a gdbstub and,
# at the 1st and 3rd entry of model_release, print g_firmware_view (the
# firmware's own figures) and heapstat (tools/heapwalk.py's independent walk).
# PORT (default 3390+) must be free loopback ports; QEMU is killed by PID.
dir=$(cd "$(dirname "$0")" && pwd)
port=${PORT:-3390}
for elf in "$@"; do
    qemu-system-arm -M netduinoplus2 -display none -monitor none -serial null \
        -semihosting-config enable=on,target=native -kernel "$elf" \
        -S -gdb tcp:127.0.0.1:$port &
    qpid=$!
    sleep 0.3
    echo "== $(basename "$elf" .elf)"
    timeout 120 gdb-multiarch -q -batch -nx "$elf" \
        -ex "target remote 127.0.0.1:$port" -ex "source $dir/heapwalk.py" \
        -ex "set print pretty off" -ex "break model_release" \
        -ex "continue" -ex "print g_firmware_view" -ex "heapstat" \
        -ex "continue 2" -ex "print g_firmware_view" -ex "heapstat" \
        ${BLOCKS:+-ex heapblocks} 2>&1 | grep '^\$\|^free=\|^block'
    kill "$qpid" 2>/dev/null
    wait "$qpid" 2>/dev/null
    port=$((port + 1))
done
