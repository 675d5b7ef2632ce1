#!/bin/sh
# measure_rtos.sh ELF... - the RTOS firmware's figures in firmware/README.md ("RTOS firmware"),
# read by gdb-multiarch with tools/rtoswalk.py (no memlife). Each looping ELF runs under QEMU
# (the machine its name says), once per stop, with the allocation trace (rtos-trace) from reset:
#   1. vTaskStartScheduler: every application task created, none run yet;
#   2. the 3rd lifecycle (g_infer_cycles == 2) at op_invoke of conv_b: tasks and heap by task;
#   3. the Logger entering pvPortMalloc for its 7th line (6 loops done): the heap by task;
#   4. stack-deep only: rtos-layers over the first inference.
# Without -icount: with it, QEMU 7.2 under rtos-trace's hundreds of breakpoint stops lost the
# firmware's progress (Infer stuck in one lifecycle, gdb's continue returning early). So the
# interleaving of the tasks, and with it addresses and whole-block sizes, can differ from run
# to run; task sets, requested bytes and the walk's consistency do not. One stop per run keeps
# each trace short.
# PORT (default 3360+) must be free loopback ports; QEMU is killed by its PID.
dir=$(cd "$(dirname "$0")" && pwd)
port=${PORT:-3360}

# run_stop ELF MACHINE TITLE GDB-COMMANDS...: one QEMU run, one stop.
run_stop() {
    elf=$1 machine=$2 title=$3
    shift 3
    qemu-system-arm -M "$machine" -display none -monitor none -serial null \
        -kernel "$elf" -S -gdb tcp:127.0.0.1:$port &
    qpid=$!
    sleep 0.3
    cmds=$(mktemp)
    printf '%s\n' "target remote 127.0.0.1:$port" "source $dir/rtoswalk.py" "$@" >"$cmds"
    echo "-- $title"
    timeout 300 gdb-multiarch -q -batch -nx "$elf" -x "$cmds" 2>&1 |
        grep -v '^warning\|^$\|^Breakpoint\|^Run till\|^[0-9]*\t\|^Reset_Handler\|rtos-trace:\|^\[Inferior\|^[a-zA-Z_]* (.*) at .*:[0-9]*$'
    rm -f "$cmds"
    kill "$qpid" 2>/dev/null
    wait "$qpid" 2>/dev/null
    port=$((port + 1))
}

for elf in "$@"; do
    name=$(basename "$elf" .elf)
    case $name in
    rtos-mps2-an385-*) machine=mps2-an385 ;;
    rtos-netduinoplus2-*) machine=netduinoplus2 ;;
    *) echo "skip $name: not an RTOS ELF"; continue ;;
    esac
    echo "== $name"
    run_stop "$elf" $machine "stop 1: vTaskStartScheduler" rtos-trace \
        "break vTaskStartScheduler" continue rtos-tasks rtos-heap
    run_stop "$elf" $machine "stop 2: 3rd lifecycle, op_invoke conv_b" rtos-trace \
        "rtos-break-when op_invoke g_infer_cycles == 2 && layer_index == 7" continue \
        rtos-tasks rtos-heap
    run_stop "$elf" $machine "stop 3: the Logger's 7th loop" rtos-trace \
        "rtos-break-when pvPortMalloc g_log_lines == 6 && pxCurrentTCB->pcTaskName[0] == 'L'" \
        continue rtos-heap
    case $name in
    *-stack-deep) run_stop "$elf" $machine "stack depth per layer, first inference" rtos-layers ;;
    esac
done
