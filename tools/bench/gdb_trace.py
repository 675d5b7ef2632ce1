# The gdb side of the tracing benchmark (docs/BENCHMARKS.md): gdb-multiarch with a Python
# breakpoint loop doing what memlife's tracer does for every allocator call: for an allocation,
# the block (pointer and header) and the call chain of up to BACKTRACE frames with function and
# file:line (memlife's allocation site); for a free, the pointer, the header and the caller.
#
# Usage (inside gdb, connected, firmware halted at reset):
#   python ROUNDS = 20; MALLOC = "pvPortMalloc"; FREE = "vPortFree"; PTR_ARG = 0; BACKTRACE = 8
#   source tools/bench/gdb_trace.py
# Prints one line "GDB-TRACE events=N seconds=S".
import time

import gdb

events = []


def reg(name):
    return int(gdb.parse_and_eval("$" + name)) & 0xFFFFFFFF


try:
    BACKTRACE  # set by the caller: 8 for the same work as memlife, 0 for the caller's pc only
except NameError:
    BACKTRACE = 8


def chain(frame, depth):
    out = []
    while frame is not None and len(out) < depth:
        sal = frame.find_sal()
        out.append((frame.pc(), frame.name(), sal.symtab.filename if sal.symtab else None, sal.line))
        frame = frame.older()
    return out


def header(ptr):
    # The 8 bytes before the user pointer hold the allocator's block header.
    mem = gdb.selected_inferior().read_memory(ptr - 8, 8)
    return bytes(mem)


class MallocReturn(gdb.FinishBreakpoint):
    def __init__(self, size, caller):
        super().__init__(gdb.newest_frame(), internal=True)
        self.size, self.caller = size, caller
        self.chain = chain(gdb.newest_frame().older(), BACKTRACE) if BACKTRACE else caller


    def stop(self):
        ptr = int(self.return_value) & 0xFFFFFFFF
        if ptr:
            events.append(("alloc", ptr, self.size, self.chain, header(ptr)))
        return False

    def out_of_scope(self):
        pass


class MallocEntry(gdb.Breakpoint):
    def stop(self):
        MallocReturn(reg("r%d" % SIZE_ARG), reg("lr"))
        return False


class FreeEntry(gdb.Breakpoint):
    def stop(self):
        ptr = reg("r%d" % PTR_ARG)
        if ptr:
            who = chain(gdb.newest_frame().older(), 1) if BACKTRACE else reg("lr")
            events.append(("free", ptr, 0, who, header(ptr)))
        return False


class RoundCounter(gdb.Breakpoint):
    """Stops at the first round, then again after `rounds` more."""

    def __init__(self, spec, rounds):
        super().__init__(spec, internal=True)
        self.hits = 0
        self.rounds = rounds

    def stop(self):
        self.hits += 1
        return self.hits == 1 or self.hits == self.rounds + 1


MallocEntry(MALLOC, internal=True)
FreeEntry(FREE, internal=True)
RoundCounter("churn_round", ROUNDS)
gdb.execute("continue")  # to the first round: not timed
events.clear()
start = time.monotonic()
gdb.execute("continue")
elapsed = time.monotonic() - start
print("GDB-TRACE events=%d seconds=%.3f" % (len(events), elapsed))
