#!/bin/sh
# tflm_min_arena.sh MODEL LOW HIGH - the smallest arena, in bytes, with which the TFLM
# firmware's MODEL builds and runs, found by rebuilding it: `make tflm-arena ITERATIONS=1
# MODEL=MODEL ARENA_BYTES=N [SCENARIO=...]` for each N tried (SCENARIO from the environment,
# healthy when unset), run under QEMU (exit 0: AllocateTensors and
# inference ok; exit 5: AllocateTensors failed). LOW must fail, HIGH must work.
#
# Bisection is exact here: the arena's start does not move with its size (the blocks before
# it are the same), and every TFLM allocation from the tail is an align-down of the tail
# before it, so whether N works is monotonic in N. Each build is deleted after its run.
# Prints one line per try and the result: "MODEL: minimum arena M B (M - 1 fails)".
set -e
[ $# -eq 3 ] || { echo "usage: $0 MODEL LOW HIGH" >&2; exit 2; }
model=$1; low=$2; high=$3
scenario=${SCENARIO:-healthy}
case $scenario in healthy) name=$model ;; *) name=$scenario-$model ;; esac
dir=$(cd "$(dirname "$0")/.." && pwd)
QEMU=${QEMU:-qemu-system-arm}

# 0: works, 1: AllocateTensors failed; anything else stops the search.
try() {
    n=$1
    make -C "$dir" --no-print-directory -s tflm-arena ITERATIONS=1 MODEL="$model" \
        ARENA_BYTES="$n" SCENARIO="$scenario" >/dev/null
    elf="$dir/build/iter1/tflm-arena-$name-$n.elf"
    set +e
    out=$(timeout 60 "$QEMU" -M netduinoplus2 -display none -monitor none -serial null \
        -semihosting-config enable=on,target=native -kernel "$elf" 2>&1)
    rc=$?
    line=$(printf '%s\n' "$out" | tail -n 1)
    set -e
    rm -rf "$elf" "${elf%.elf}.map" "$dir/build/iter1/tflm-obj/arena-$name-$n"
    echo "  $n B: exit $rc: $line" >&2
    case $rc in
        0) return 0 ;;
        5) return 1 ;;
        *) echo "error: arena $n B ended with exit code $rc" >&2; exit 2 ;;
    esac
}

if try "$low"; then echo "error: $low B already works" >&2; exit 2; fi
if ! try "$high"; then echo "error: $high B does not work" >&2; exit 2; fi
while [ $((high - low)) -gt 1 ]; do
    mid=$(((low + high) / 2))
    if try "$mid"; then high=$mid; else low=$mid; fi
done
echo "$model: minimum arena $high B ($low fails)"
