#!/usr/bin/env python3
"""Bare RSP loops against QEMU's gdb stub: the floors memlife's tracing is compared with
(docs/BENCHMARKS.md, tools/bench/floors.sh).

    rsp_floor.py PORT MODE ADDR [SECONDS]

ADDR is a function entry (the allocator's malloc). MODE:

  floor   `c` + one `m`, the breakpoint left in place: QEMU re-reports the same breakpoint with no
          progress. Two round trips per stop, the cheapest a tracer that reads memory can be.
  step    progress the way a plain debugger makes it: `z0` (lift), `s`, `Z0` (put back), `c`,
          one `m`. Five round trips per stop, and a flush of QEMU's translation cache.
  memlife memlife's exchange at an allocation's return, breakpoint left in place: `c`, `g`,
          then the stack window (256 B) and the block header pipelined, then `G` sent with the
          next `c`. Three round trips per stop.
  spec    the same facts with the stack window read speculatively with `g` (its address is the
          stack pointer of the previous stop at this pc), the header after: `c`, `g` + `m`,
          `m`. Still three round trips, one of them smaller.
  pair    the fewest round trips for what a stop needs when every address is predicted: `c`,
          then `g` and both `m` pipelined. Two round trips per stop: the floor's.

Prints `RSP-FLOOR mode=... stops=N seconds=S`.
"""
import socket
import sys
import time


class Rsp:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        # QEMU 7.2 has no QStartNoAckMode: every reply is acknowledged, as memlife does.
        self.send(b"qSupported:swbreak+")
        self.recv()

    @staticmethod
    def frame(p):
        return b"$" + p + b"#%02x" % (sum(p) & 0xFF)

    def send(self, *packets):
        self.s.sendall(b"".join(self.frame(p) for p in packets))

    def recv(self, ack=True):
        while True:
            i = self.buf.find(b"$")
            j = self.buf.find(b"#", i + 1) if i >= 0 else -1
            if i >= 0 and j >= 0 and len(self.buf) >= j + 3:
                p = self.buf[i + 1 : j]
                self.buf = self.buf[j + 3 :]
                if ack:
                    self.s.sendall(b"+")
                return p
            data = self.s.recv(65536)
            if not data:
                raise SystemExit("connection closed")
            self.buf += data

    def ask(self, *packets):
        self.send(*packets)
        return [self.recv() for _ in packets]

    def cont(self):
        self.send(b"c")
        r = self.recv()
        assert r.startswith(b"T") or r.startswith(b"S"), r


def main():
    port, mode, addr = int(sys.argv[1]), sys.argv[2], int(sys.argv[3], 0)
    seconds = float(sys.argv[4]) if len(sys.argv) > 4 else 3.0
    r = Rsp(port)
    bp = b"%x" % addr
    assert r.ask(b"Z0," + bp + b",2") == [b"OK"]
    r.cont()
    regs = r.ask(b"g")[0]
    sp = int.from_bytes(bytes.fromhex(regs[13 * 8 : 14 * 8].decode()), "little")
    header = b"m20000100,8"
    window = b"m%x,100" % sp
    stops = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for _ in range(50):
            if mode == "floor":
                r.cont()
                r.ask(b"m%x,4" % sp)
            elif mode == "step":
                r.ask(b"z0," + bp + b",2")
                r.send(b"s")
                r.recv()
                r.ask(b"Z0," + bp + b",2")
                r.cont()
                r.ask(b"m%x,4" % sp)
            elif mode == "memlife":
                # The registers go back with the continue, in one segment, as memlife sends
                # them; then `g`, then the window and the header pipelined.
                r.send(b"G" + regs, b"c")
                # QEMU does not wait for the `+` of this reply; sent now it would stop the core.
                assert r.recv(ack=False) == b"OK"
                assert r.recv().startswith(b"T")
                regs = r.ask(b"g")[0]
                r.ask(window, header)
            elif mode == "spec":
                r.cont()
                r.ask(b"g", window)
                r.ask(header)
            elif mode == "pair":
                r.cont()
                r.ask(b"g", window, header)
            else:
                raise SystemExit(f"unknown mode {mode}")
            stops += 1
    dt = time.monotonic() - t0
    print(f"RSP-FLOOR mode={mode} stops={stops} seconds={dt:.3f}")
    r.send(b"z0," + bp + b",2")
    r.recv()


if __name__ == "__main__":
    main()
