#!/bin/sh
# qemu_check.sh ELF... - run each exiting (ITERATIONS) ELF under QEMU 7.2
# headless, with semihosting for its one-line report and its exit status.
# Prints one line per ELF; exits 1 if any failed, naming each failure.
QEMU=${QEMU:-qemu-system-arm}
TIMEOUT=${TIMEOUT:-60}
failed=""
for elf in "$@"; do
    name=$(basename "$elf" .elf)
    out=$(timeout "$TIMEOUT" "$QEMU" -M netduinoplus2 -display none -monitor none \
        -serial null -semihosting-config enable=on,target=native -kernel "$elf" 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | tail -n 1)
    if [ $rc -eq 0 ]; then
        echo "ok: $name: $line"
    elif [ $rc -eq 124 ]; then
        echo "FAILED: $name (timeout after $TIMEOUT s)"
        failed="$failed $name"
    else
        echo "FAILED: $name (exit code $rc): $line"
        failed="$failed $name"
    fi
done
if [ -n "$failed" ]; then
    echo "qemu-check: FAILED:$failed"
    exit 1
fi
echo "qemu-check: all $# ELFs ok"
