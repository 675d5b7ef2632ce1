# Every thread gdb lists, as gdb itself shows it: `info threads`, and per thread its number,
# target id, backtrace (text and frames) and frame-0 registers, printed as one JSON line
# prefixed with "REF-THREADS ". The selected thread is selected again at the end.
import json

import gdb

REGISTERS = ["r%d" % i for i in range(13)] + ["sp", "lr", "pc", "xpsr"]


def register(frame, name):
    """A register as an unsigned 32-bit number, or None when gdb has no value for it."""
    try:
        return int(frame.read_register(name)) & 0xFFFFFFFF
    except gdb.error:
        return None


def frames(limit=64):
    out = []
    f = gdb.newest_frame()
    while f is not None and len(out) < limit:
        try:
            pc = f.pc()
        except gdb.error:
            pc = None
        out.append({"function": f.name(), "pc": pc})
        try:
            f = f.older()
        except gdb.error:
            break
    return out


class RefThreads(gdb.Command):
    """Print every thread's backtrace and registers as JSON (one line, prefixed REF-THREADS)."""

    def __init__(self):
        super().__init__("ref-threads", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        selected = gdb.selected_thread()
        info = gdb.execute("info threads", to_string=True)
        threads = []
        for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
            t.switch()
            f0 = gdb.newest_frame()
            threads.append({
                "num": t.num,
                "ptid": list(t.ptid),
                "selected": t.num == selected.num,
                "bt": gdb.execute("bt", to_string=True),
                "frames": frames(),
                "registers": {n: register(f0, n) for n in REGISTERS},
            })
        selected.switch()
        print("REF-THREADS " + json.dumps({"info": info, "threads": threads}))


RefThreads()
