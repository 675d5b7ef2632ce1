# cppwalk.py - gdb-multiarch Python helpers to measure the C++ interpreter
# firmware (cpp/, README "C++ interpreter firmware"); sourced after
# heapwalk.py, whose stat()/fmt() walk the newlib-nano heap.
#
#   (gdb) source tools/heapwalk.py
#   (gdb) source tools/cppwalk.py
#   (gdb) cpp-summary N       run N cycles; per cycle and phase: free bytes at
#                             entry/return, the lowest free inside, allocations
#                             (count, requested bytes, sites), and the blocks
#                             still live after app::Teardown with their site
#
# Allocations are traced at newlib's _malloc_r (size in r1, pointer in r0 at
# its return) and _free_r (pointer in r1): operator new/new[] and delete end
# there. A site is the first frame outside newlib and libstdc++, as
# function (file:line).
import gdb

CPP_PHASES = [
    ("app::Setup", "setup"),
    ("tinyml::Model::Open", "open"),
    ("tinyml::Interpreter::AllocateTensors", "allocate"),
    ("tinyml::Interpreter::Invoke()", "invoke"),
    ("app::Teardown", "teardown"),
]
ALLOC_FRAMES = ("_malloc_r", "malloc", "operator new", "_free_r", "free", "operator delete")


def site_of(frame):
    """Function and file:line of the first frame that is not the allocator."""
    f = frame
    depth = 0
    while f is not None and depth < 12:
        name = f.name() or "??"
        if not name.startswith(ALLOC_FRAMES):
            sal = f.find_sal()
            where = "%s:%d" % (sal.symtab.filename.split("/")[-1], sal.line) if sal.symtab else "?"
            return "%s (%s)" % (name, where)
        f = f.older()
        depth += 1
    return "?"


class Tracer:
    def __init__(self):
        self.events = []  # (kind, name, stat, extra)
        self.cycle = 0
        self.stack = []   # open phases (name) for attribution
        self.live = {}    # ptr -> (size, site, cycle, phase)

    def phase(self):
        return self.stack[-1] if self.stack else "outside"


T = Tracer()


def entry_of(spec):
    """Address of the first instruction of the function `spec` names."""
    sal = gdb.decode_line(spec)[1][0]
    return gdb.block_for_pc(sal.pc).function.value().address


class Returns(gdb.Breakpoint):
    """One breakpoint per return address; a return is the hit whose SP is the
    SP the call had at its entry. gdb's FinishBreakpoint is not used: it drops
    a frame that has tail-called another function (RunCycle tail-calls
    app::Teardown, Teardown tail-calls operator delete)."""

    by_addr = {}

    def __init__(self, addr):
        super().__init__("*0x%x" % addr, internal=True)
        self.waiting = []  # (sp, callback)

    @classmethod
    def watch(cls, callback):
        lr = int(gdb.parse_and_eval("(unsigned)$lr")) & ~1
        sp = int(gdb.parse_and_eval("(unsigned)$sp"))
        bp = cls.by_addr.get(lr)
        if bp is None:
            bp = cls.by_addr[lr] = cls(lr)
        bp.waiting.append((sp, callback))

    def stop(self):
        # Every call waiting here with this SP returns now: a function that tail-calls
        # another (tflm's HandleBuildFailure -> ReleaseModel) returns for both.
        sp = int(gdb.parse_and_eval("(unsigned)$sp"))
        done = [callback for want, callback in self.waiting if want == sp]
        self.waiting = [(want, callback) for want, callback in self.waiting if want != sp]
        for callback in done:
            callback()
        return False


class PhaseEntry(gdb.Breakpoint):
    def __init__(self, spec, label):
        super().__init__("*0x%x" % int(entry_of(spec)), internal=True)
        self.label = label

    def stop(self):
        if self.label == "setup":
            T.cycle += 1
        T.stack.append(self.label)
        T.events.append(("enter", self.label, stat(), T.cycle))
        label = self.label

        def returned():
            if T.stack and T.stack[-1] == label:
                T.stack.pop()
            T.events.append(("ret", label, stat(), T.cycle))

        Returns.watch(returned)
        return False


class NodeEntry(gdb.Breakpoint):
    """A per-node function (PrepareNode(int), Invoke(int)): the node index is
    the second argument, r1 (r0 is `this`)."""

    def __init__(self, spec, label):
        super().__init__("*0x%x" % int(entry_of(spec)), internal=True)
        self.label = label

    def stop(self):
        node = int(gdb.parse_and_eval("(int)$r1"))
        T.events.append(("node-enter", self.label, stat(), node))
        label = self.label

        def returned():
            T.events.append(("node-ret", label, stat(), node))

        Returns.watch(returned)
        return False


class MallocEntry(gdb.Breakpoint):
    def __init__(self):
        super().__init__("*0x%x" % int(entry_of("_malloc_r")), internal=True)

    def stop(self):
        size = int(gdb.parse_and_eval("(unsigned)$r1"))
        site = site_of(gdb.newest_frame())
        phase = T.phase()

        def returned():
            ptr = int(gdb.parse_and_eval("(unsigned)$r0"))
            T.live[ptr] = (size, site, T.cycle, phase)
            T.events.append(("malloc", phase, stat(), (size, ptr, site)))

        Returns.watch(returned)
        return False


class FreeEntry(gdb.Breakpoint):
    def __init__(self):
        super().__init__("*0x%x" % int(entry_of("_free_r")), internal=True)

    def stop(self):
        ptr = int(gdb.parse_and_eval("(unsigned)$r1"))
        if ptr:
            T.live.pop(ptr, None)
            T.events.append(("free", T.phase(), stat(), ptr))
        return False


class CppSummary(gdb.Command):
    """cpp-summary N: run N cycles of the C++ firmware; per cycle the phase
    figures and the blocks still live after app::Teardown."""

    def __init__(self):
        super().__init__("cpp-summary", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        n = int(arg or 2)
        bps = [PhaseEntry(spec, label) for spec, label in CPP_PHASES]
        bps += [NodeEntry("tinyml::Interpreter::PrepareNode(int)", "prepare"),
                NodeEntry("tinyml::Interpreter::Invoke(int)", "eval")]
        bps += [MallocEntry(), FreeEntry()]
        stop = gdb.Breakpoint("app::Setup", internal=True)
        stop.ignore_count = n
        fail = gdb.Breakpoint("board::Fail", internal=True)
        print("start: " + fmt(stat()))
        gdb.execute("continue", to_string=True)
        for b in bps + [stop, fail] + list(Returns.by_addr.values()):
            b.delete()
        Returns.by_addr.clear()
        where = gdb.selected_frame().name()
        self.report(n)
        print("stopped in:", where)

    def report(self, n):
        rows = {}
        for kind, label, s, extra in T.events:
            if kind == "enter" and label == "setup":
                rows[extra] = {"baseline": s["free"], "phases": [], "allocs": {}, "frees": {}}
            if not rows:
                continue
            r = rows[max(rows)]
            f = s["free"]
            if kind == "enter":
                r["phases"].append({"label": label, "enter": f, "min": f, "ret": None})
            elif kind == "ret":
                for p in reversed(r["phases"]):
                    if p["label"] == label and p["ret"] is None:
                        p["ret"], p["after"] = f, s
                        p["min"] = min(p["min"], f)
                        break
            # Free bytes are lowest right before a free and right after a
            # malloc: every phase still open sees them.
            for p in r["phases"]:
                if p["ret"] is None:
                    p["min"] = min(p["min"], f)
            if kind == "node-enter":
                r.setdefault("nodes", []).append({"label": label, "node": extra, "enter": f,
                                                  "min": f, "ret": None})
            elif kind == "node-ret":
                for nd in reversed(r.get("nodes", [])):
                    if nd["label"] == label and nd["node"] == extra and nd["ret"] is None:
                        nd["ret"] = f
                        break
            for nd in r.get("nodes", []):
                if nd["ret"] is None:
                    nd["min"] = min(nd["min"], f)
            if kind == "malloc":
                size, _ptr, site = extra
                a = r["allocs"].setdefault(label, [0, 0, {}])
                a[0] += 1
                a[1] += size
                a[2].setdefault(site, []).append(size)
            elif kind == "free":
                r["frees"][label] = r["frees"].get(label, 0) + 1
        for cyc in sorted(rows):
            r = rows[cyc]
            done = any(p["label"] == "teardown" and p["ret"] is not None for p in r["phases"])
            print("cycle %d (%s), baseline (app::Setup entry) free=%d" % (
                cyc, "complete" if done else "partial", r["baseline"]))
            inv = 0
            for p in r["phases"]:
                name = p["label"]
                if name == "invoke":
                    inv += 1
                    name = "invoke#%d" % inv
                ret = p["ret"]
                print("  %-10s enter=%-6d min=%-6d ret=%-6s overhead=%-6d below-baseline=%d" % (
                    name, p["enter"], p["min"], ret if ret is not None else "-",
                    p["enter"] - p["min"], r["baseline"] - p["min"]))
                if p["label"] == "teardown" and ret is not None:
                    print("             after teardown: " + fmt(p["after"]))
            nodes = r.get("nodes", [])
            prep = [nd for nd in nodes if nd["label"] == "prepare" and nd["ret"] is not None]
            if prep:
                print("  PrepareNode(i) resident step: " + ", ".join(
                    "%d:%d" % (nd["node"], nd["enter"] - nd["ret"]) for nd in prep))
            evals = [nd for nd in nodes if nd["label"] == "eval" and nd["ret"] is not None]
            if evals:
                first = evals[:len(prep) or len(evals)]
                print("  Invoke(i) transient in invoke#1: " + ", ".join(
                    "%d:%d" % (nd["node"], nd["enter"] - nd["min"]) for nd in first))
                kept = [nd for nd in evals if nd["ret"] != nd["enter"]]
                print("  Invoke(i) calls whose free bytes differ at return: " + (", ".join(
                    "node %d: %+d" % (nd["node"], nd["ret"] - nd["enter"]) for nd in kept) or "none"))
            for label in ["setup", "open", "allocate", "invoke", "teardown", "outside"]:
                if label not in r["allocs"] and label not in r["frees"]:
                    continue
                a = r["allocs"].get(label, [0, 0, {}])
                print("  in %-9s %3d allocations (%6d B requested), %3d frees" % (
                    label, a[0], a[1], r["frees"].get(label, 0)))
                for site, sizes in sorted(a[2].items(), key=lambda x: -len(x[1])):
                    print("      %3d x %s: %s B" % (len(sizes), site, " ".join(map(str, sizes))))
        print("live blocks at the end, by the cycle that allocated them:")
        for ptr, (size, site, cyc, phase) in sorted(T.live.items(), key=lambda x: (x[1][2], x[0])):
            print("  cycle %d %-9s 0x%08x %5d B  %s" % (cyc, phase, ptr, size, site))


CppSummary()
