#!/bin/sh
# fetch_freertos_kernel.sh BUILD_DIR - make BUILD_DIR/FreeRTOS-Kernel a link to the FreeRTOS
# kernel sources the RTOS firmware is built from (rtos/kernel/Cargo.toml says which and why).
# cargo downloads the package into its own cache (checksum from rtos/kernel/Cargo.lock) and
# `cargo metadata` tells where it unpacked it; nothing is copied into the repository.
set -eu
build=$1
cargo=${CARGO:-cargo}
manifest=rtos/kernel/Cargo.toml
command -v "$cargo" >/dev/null || { echo "error: cargo not found (it fetches the FreeRTOS kernel sources); install Rust with rustup" >&2; exit 2; }
pkg_manifest=$(env -u MAKEFLAGS -u MFLAGS "$cargo" metadata --locked --format-version 1 \
    --manifest-path "$manifest" | python3 -c '
import json, sys
meta = json.load(sys.stdin)
paths = [p["manifest_path"] for p in meta["packages"] if p["name"] == "freertos-next"]
if len(paths) != 1:
    sys.exit("error: cargo metadata lists no freertos-next package")
print(paths[0])')
kernel=$(dirname "$pkg_manifest")/FreeRTOS-Kernel
for f in tasks.c list.c queue.c timers.c include/FreeRTOS.h LICENSE.md \
         portable/GCC/ARM_CM3/port.c portable/GCC/ARM_CM4F/port.c; do
    [ -f "$kernel/$f" ] || { echo "error: $kernel/$f missing from the package" >&2; exit 2; }
done
mkdir -p "$build"
ln -sfn "$kernel" "$build/FreeRTOS-Kernel"
echo "FreeRTOS kernel: $kernel"
