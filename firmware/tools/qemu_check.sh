#!/bin/sh
# qemu_check.sh ELF... - run each exiting (ITERATIONS) ELF under QEMU 7.2
# headless, with semihosting for its one-line report and its exit status.
# Prints one line per ELF; exits 1 if any failed, naming each failure.
# The machine is netduinoplus2, or the one an RTOS ELF's name says
# (rtos-<machine>-<scenario>.elf); RTOS ELFs run with -icount, so that their
# timing self-check sees every tick however busy the host is. The RTOS assert
# build passes when its configASSERT fires (exit status 7, FW_EXIT_ASSERT).
QEMU=${QEMU:-qemu-system-arm}
TIMEOUT=${TIMEOUT:-60}
failed=""
for elf in "$@"; do
    name=$(basename "$elf" .elf)
    machine=netduinoplus2
    extra=""
    case $name in
    rtos-mps2-an385-*) machine=mps2-an385; extra="-icount shift=auto" ;;
    rtos-*) extra="-icount shift=auto" ;;
    esac
    expect=0
    case $name in
    rtos-*-assert) expect=7 ;;
    esac
    # shellcheck disable=SC2086 # $extra is a word list
    out=$(timeout "$TIMEOUT" "$QEMU" -M $machine $extra -display none -monitor none \
        -serial null -semihosting-config enable=on,target=native -kernel "$elf" 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | tail -n 1)
    if [ $rc -eq $expect ]; then
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
