#!/usr/bin/env python3
"""Sparse against bulk heap walks (docs/BENCHMARKS.md, "Heap walks: sparse against bulk").

    python3 tools/bench/sparse_walk.py [--repeats N] [--memlife PATH] [--quick]

For each arena size (64 KiB to 8 MiB) and block count (10 to 10,000) it builds
firmware/bench/sparse_heap.c (FreeRTOS heap_4, arena in mps2-an386's 16 MiB PSRAM), runs it on
its own QEMU (`-M mps2-an386`, started and killed by pid) to bench_done, and walks the same
halted heap with `memlife heap --walk bulk`, `--walk sparse` and `--walk auto` (auto once on the
link as measured, once with MEMLIFE_LINK_MODEL modeling a 1 ms, 500 KB/s probe). It checks that
every walk gives the same heap, and prints a Markdown table: round trips, bytes and the walk's
time on QEMU (median of the repeats), and the time the same reads would take on the probe.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FW = ROOT / "firmware"
OUT = FW / "build" / "bench-sparse"
SIZES = [64 << 10, 1 << 20, 8 << 20]
BLOCKS = [10, 100, 1000, 10000]
PROBE_RTT_US, PROBE_BPS = 1000, 500_000
PROBE_MODEL = f"{PROBE_RTT_US}:{PROBE_BPS}"


def build(size, blocks):
    elf = OUT / f"heap4-{size}-{blocks}.elf"
    srcs = [FW / "src/heap4.c", FW / "bench/sparse_heap.c", FW / "ld/mps2-an386-psram.ld"]
    if elf.exists() and all(elf.stat().st_mtime > s.stat().st_mtime for s in srcs):
        return elf
    OUT.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft", "-O2", "-g",
         "-std=c11", "-Wall", "-Wextra", "-ffunction-sections", "-fdata-sections", "-fno-common",
         f"-I{FW / 'src'}", f"-DconfigTOTAL_HEAP_SIZE={size}", f"-DBENCH_BLOCKS={blocks}",
         "--specs=nano.specs", "-nostartfiles", f"-L{FW / 'ld'}", "-Tmps2-an386-psram.ld",
         "-Wl,--gc-sections", "-Wl,--no-warn-rwx-segments",
         str(FW / "src/heap4.c"), str(FW / "bench/sparse_heap.c"), "-o", str(elf)],
        check=True)
    return elf


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Qemu:
    """One QEMU, halted at reset with its gdbstub on a free loopback port; killed by pid."""

    def __init__(self, elf):
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["qemu-system-arm", "-M", "mps2-an386", "-display", "none", "-monitor", "none",
             "-serial", "null", "-S", "-gdb", f"tcp:127.0.0.1:{self.port}", "-kernel", str(elf)],
            stdin=subprocess.DEVNULL)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                time.sleep(0.2)  # the probe took QEMU's one connection slot for a moment
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("QEMU did not open its gdb port")

    def close(self):
        self.proc.kill()
        self.proc.wait()


def walk(memlife, elf, port, strategy, model=None, at=False):
    env = dict(os.environ)
    env.pop("MEMLIFE_LINK_MODEL", None)
    if model:
        env["MEMLIFE_LINK_MODEL"] = model
    args = [memlife, "heap", "--elf", str(elf), "--gdb", f"127.0.0.1:{port}", "--json",
            "--leave", "halted", "--walk", strategy]
    if at:
        args += ["--at", "bench_done", "--timeout", "300"]
    out = subprocess.run(args, env=env, capture_output=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {out.stderr.decode()}")
    v = json.loads(out.stdout)
    v.pop("at", None)  # said by the walk that stopped there only
    link = v.pop("link")
    return v, link


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--memlife", default=str(ROOT / "target/release/memlife"))
    ap.add_argument("--quick", action="store_true", help="64 KiB and 8 MiB, 10 and 1000 blocks")
    a = ap.parse_args()
    if not Path(a.memlife).exists():
        subprocess.run(["cargo", "build", "--release", "--locked", "-q", "-p", "memlife"],
                       cwd=ROOT, check=True)
    sizes = [SIZES[0], SIZES[-1]] if a.quick else SIZES
    blocks_list = [10, 1000] if a.quick else BLOCKS
    rows = []
    for size in sizes:
        for blocks in blocks_list:
            # heap_4 blocks are at least 16 bytes; the fill uses 70% of the arena.
            if blocks * 24 > size * 7 // 10:
                continue
            elf = build(size, blocks)
            q = Qemu(elf)
            try:
                base, _ = walk(a.memlife, elf, q.port, "bulk", at=True)
                res = {}
                for name, strategy, model in [("bulk", "bulk", None), ("sparse", "sparse", None),
                                              ("auto", "auto", None),
                                              ("auto@probe", "auto", PROBE_MODEL)]:
                    links = []
                    for _ in range(a.repeats):
                        v, link = walk(a.memlife, elf, q.port, strategy, model)
                        if v != base:
                            keys = [k for k in base if base[k] != v.get(k)]
                            raise RuntimeError(
                                f"{size}/{blocks}: --walk {name} differs from bulk in {keys}")
                        links.append(link)
                    res[name] = links
            finally:
                q.close()
            walked = len(base["blocks"])
            rows.append((size, walked, res))
            print(f"{size >> 10} KiB, {walked} blocks: done", file=sys.stderr)

    def probe_ms(link):
        return (link["round_trips"] * PROBE_RTT_US + link["bytes_read"] * 1e6 / PROBE_BPS) / 1e3

    print("| arena | blocks | strategy | round trips | bytes read | walk on QEMU (ms) "
          "| on a 1 ms, 500 KB/s probe (ms, est.) | auto chose (QEMU / probe model) |")
    print("|---:|---:|---|---:|---:|---:|---:|---|")
    for size, walked, res in rows:
        arena = f"{size >> 20} MiB" if size >= 1 << 20 else f"{size >> 10} KiB"
        chose = f"{res['auto'][0]['strategy']} / {res['auto@probe'][0]['strategy']}"
        for name in ["bulk", "sparse", "auto@probe"]:
            links = res[name]
            l0 = links[0]
            ms = statistics.median(l["walk_us"] for l in links) / 1e3
            label = "auto (probe model)" if name == "auto@probe" else name
            print(f"| {arena} | {walked} | {label} | {l0['round_trips']} | {l0['bytes_read']} "
                  f"| {ms:.1f} | {probe_ms(l0):.1f} | {chose if name == 'bulk' else ''} |")
    auto = [(s, w, r["auto"][0]) for s, w, r in rows]
    print("\nauto on QEMU as measured: " + ", ".join(
        f"{s >> 10} KiB/{w}: {l['strategy']} (rtt {l.get('rtt_us')} us, "
        f"{l.get('bytes_per_s')} B/s)" for s, w, l in auto))


if __name__ == "__main__":
    main()
