# heapwalk.py - gdb-multiarch Python helpers to measure the firmware's heap
# at the lifecycle phases (used by tools/measure.sh; see README "Measuring").
#
#   (gdb) source tools/heapwalk.py
#   (gdb) heapstat            one line: free, largest free block, ratio, ...
#   (gdb) phase-trace N       run N lifecycles, one line per phase entry/return
#
#   (gdb) heapblocks          every block, physically: address, size, used/free,
#                             and on poisoned tlsf the requested size and the
#                             canary (and, comprehensive, fill) state
#
# heap4: reads xStart/pxEnd/xFreeBytesRemaining and walks the free list.
#        heap protector (xHeapCanary present): every link is decoded with the
#        canary (pxEnd itself is plain). heap_5 (xHeapRegions, no ucHeap):
#        zero-size region markers still linked in the free list are not free
#        blocks; heapstat adds " markers=N" (N markers in the list) for heap_5.
# nano : walks __malloc_free_list; break = __sbrk_heap_end; limit = _heap_limit.
#        "free" = free-list bytes + headroom (limit - break), like heap4's
#        counter it includes chunk headers; "largest" = max(largest free
#        chunk, headroom). The seed's ratio is largest/free.
# tlsf : walks registered_heaps; per heap reads struct multi_heap_info and
#        walks the TLSF pool physically (pool - 4, += 4 + size, to the
#        zero-size sentinel), asserting free_bytes == sum(free) + 4*(n + 1).
#        "free" = sum of the heaps' free_bytes; "largest" = the largest free
#        block's payload size over both heaps; per heap: h0=free/largest.
import gdb

MSB = 0x80000000


def val(expr):
    return int(gdb.parse_and_eval(expr))


def is_heap4():
    try:
        gdb.parse_and_eval("xFreeBytesRemaining")
        return True
    except gdb.error:
        return False


def is_tlsf():
    try:
        gdb.parse_and_eval("registered_heaps")
        return True
    except gdb.error:
        return False


def u32(inf, addr):
    return int.from_bytes(inf.read_memory(addr, 4), "little")


def has_symbol(name):
    try:
        gdb.parse_and_eval(name)
        return True
    except gdb.error:
        return False


def canary():
    """The heap protector's canary (0 without the protector)."""
    return val("(unsigned)xHeapCanary") if has_symbol("xHeapCanary") else 0


def heap5_regions():
    """heap_5's regions as the allocator carves them: [(start, marker)]."""
    out = []
    i = 0
    while i < 16:
        size = val("xHeapRegions[%d].xSizeInBytes" % i)
        if size == 0:
            break
        raw = val("(unsigned)xHeapRegions[%d].pucStartAddress" % i)
        start = (raw + 7) & ~7
        size -= start - raw
        out.append((start, (start + size - 8) & ~7))
        i += 1
    return out


def freertos_regions():
    if has_symbol("xHeapRegions"):
        return heap5_regions()
    base = val("(unsigned)&ucHeap")
    return [((base + 7) & ~7, (base + val("sizeof(ucHeap)") - 8) & ~7)]


def poisoning():
    """'none', 'light' or 'comprehensive' (tlsf builds)."""
    try:
        gdb.lookup_type("poison_head_t")
    except gdb.error:
        return "none"
    if has_symbol("multi_heap_poisoning_level") and val("multi_heap_poisoning_level") == 2:
        return "comprehensive"
    return "light"


HEAD_CANARY = 0xABBA1234
TAIL_CANARY = 0xBAAD5678


def poison_state(inf, ptr, size):
    """(requested size or None, canary state) of a used tlsf block's payload."""
    head = u32(inf, ptr)
    if head != HEAD_CANARY:
        return None, "head-broken"
    req = u32(inf, ptr + 4)
    if req > size - 12:
        return None, "size-broken"
    tail = int.from_bytes(inf.read_memory(ptr + 8 + req, 4), "little")
    return req, "ok" if tail == TAIL_CANARY else "tail-broken"


def fill_state(inf, ptr, size):
    """Comprehensive poisoning: a free block's payload but its first two and
    last word holds 0xFE."""
    if size <= 12:
        return "ok"
    data = bytes(inf.read_memory(ptr + 8, size - 12))
    bad = [i for i, b in enumerate(data) if b != 0xFE]
    return "ok" if not bad else "fill-broken@+%d" % (bad[0] + 8)


def tlsf_heap(inf, h):
    """One registered heap (address of its struct heap_t_)."""
    hv = gdb.parse_and_eval("*(struct heap_t_ *)%d" % h)
    info = int(hv["heap"])
    mi = gdb.parse_and_eval("*(struct multi_heap_info *)%d" % info)
    ctl = int(mi["heap_data"])
    names = [f.name for f in gdb.lookup_type("control_t").fields()]
    if "size" in names:
        csize = int(gdb.parse_and_eval("((control_t *)%d)->size" % ctl))
    else:
        csize = gdb.lookup_type("control_t").sizeof
    b = ctl + csize - 4
    largest = n = tot = nused = broken = 0
    mode = poisoning()
    blocks = []
    while nused + n < 100000:
        raw = u32(inf, b + 4)
        size = raw & ~3
        if size == 0:
            break
        ptr = b + 8
        if raw & 1:
            tot += size
            n += 1
            largest = max(largest, size)
            state = fill_state(inf, ptr, size) if mode == "comprehensive" else None
            blocks.append((b, size, False, None, state))
        else:
            nused += 1
            req, state = poison_state(inf, ptr, size) if mode != "none" else (None, None)
            blocks.append((b, size, True, req, state))
        if blocks[-1][4] not in (None, "ok"):
            broken += 1
        b += 4 + size
    free = int(mi["free_bytes"])
    assert free == tot + 4 * (n + 1), "heap 0x%x: free_bytes %d != %d + 4*(%d+1)" % (
        int(hv["start"]), free, tot, n)
    owner = int(hv["heap_mux"]["owner"])
    assert owner == 0xB33FFFFF, "heap 0x%x busy (owner 0x%x)" % (int(hv["start"]), owner)
    return dict(free=free, largest=largest, nfree=n, nused=nused,
                minever=int(mi["minimum_free_bytes"]), start=int(hv["start"]),
                blocks=blocks, broken=broken, poisoning=mode)


def stat():
    inf = gdb.selected_inferior()
    if is_tlsf():
        heaps = []
        h = val("(unsigned)registered_heaps.slh_first")
        while h != 0 and len(heaps) < 16:
            heaps.append(tlsf_heap(inf, h))
            h = val("(unsigned)((struct heap_t_ *)%d)->next.sle_next" % h)
        return dict(free=sum(x["free"] for x in heaps),
                    largest=max([x["largest"] for x in heaps] or [0]),
                    nfree=sum(x["nfree"] for x in heaps),
                    minever=sum(x["minever"] for x in heaps), heaps=heaps,
                    poisoning=poisoning(), broken=sum(x["broken"] for x in heaps))
    if is_heap4():
        heap5 = has_symbol("xHeapRegions")
        if val("(unsigned)pxEnd") == 0:
            # Not built yet: report what the init will create.
            sizes = [m - s for s, m in freertos_regions()]
            r = dict(free=sum(sizes), largest=max(sizes), nfree=len(sizes), minever=sum(sizes))
            if heap5:
                r["markers"] = len(sizes) - 1
            return r
        end = val("(unsigned)pxEnd")  # plain, even with the protector
        key = canary()
        b = val("(unsigned)xStart.pxNextFreeBlock") ^ key
        largest = n = tot = markers = 0
        while b != end and n + markers < 10000:
            size = u32(inf, b + 4)
            if size == 0:
                markers += 1  # heap_5 region marker: a link, not a free block
            else:
                tot += size
                largest = max(largest, size)
                n += 1
            b = u32(inf, b) ^ key
        free = val("xFreeBytesRemaining")
        assert free == tot, "walk %d != xFreeBytesRemaining %d" % (tot, free)
        r = dict(free=free, largest=largest, nfree=n,
                 minever=val("xMinimumEverFreeBytesRemaining"))
        if heap5:
            r["markers"] = markers
        return r
    if not has_symbol("__malloc_free_list"):
        raise gdb.GdbError("heapwalk: no heap4/heap5, tlsf or newlib-nano heap here "
                           "(dlmalloc builds: print g_firmware_view)")
    c = val("(unsigned)__malloc_free_list")
    largest = n = tot = 0
    while c != 0 and n < 10000:
        size = int.from_bytes(inf.read_memory(c, 4), "little")
        tot += size
        largest = max(largest, size)
        n += 1
        c = int.from_bytes(inf.read_memory(c + 4, 4), "little")
    brk = val("(unsigned)__sbrk_heap_end") or val("(unsigned)&_end")
    head = val("(unsigned)&_heap_limit") - brk
    return dict(free=tot + head, largest=max(largest, head), nfree=n, listfree=tot,
                headroom=head, brk=brk)


def fmt(s):
    r = s["largest"] / s["free"] if s["free"] else 0.0
    extra = ""
    if "headroom" in s:
        extra = " list=%d headroom=%d brk=0x%08x" % (s["listfree"], s["headroom"], s["brk"])
    elif "heaps" in s:
        extra = " minever=%d" % s["minever"] + "".join(
            " h%d=%d/%d(%.3f,nfree=%d)" % (i, h["free"], h["largest"],
                                           h["largest"] / h["free"] if h["free"] else 0,
                                           h["nfree"])
            for i, h in enumerate(s["heaps"]))
    else:
        extra = " minever=%d" % s["minever"]
        if "markers" in s:
            extra += " markers=%d" % s["markers"]
    if s.get("poisoning", "none") != "none":
        extra += " poisoning=%s broken=%d" % (s["poisoning"], s["broken"])
    return "free=%d largest=%d ratio=%.3f nfree=%d%s" % (s["free"], s["largest"], r,
                                                           s["nfree"], extra)


class HeapStat(gdb.Command):
    def __init__(self):
        super().__init__("heapstat", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        print(fmt(stat()))


PHASES = ["model_load", "graph_build", "inference_run", "model_switch", "model_release"]


class FinishBp(gdb.FinishBreakpoint):
    def __init__(self, frame, log, name):
        super().__init__(frame, internal=True)
        self.log, self.name = log, name

    def stop(self):
        self.log.append(("ret", self.name, stat(), None))
        return False


class PhaseBp(gdb.Breakpoint):
    def __init__(self, name, log):
        # op_init/op_invoke: after the prologue (push only) the index is
        # still in r1 (the named parameter may be optimised out at -O2).
        spec = name
        super().__init__(spec, internal=True)
        self.name, self.log = name, log

    def stop(self):
        extra = None
        if self.name in ("op_init", "op_invoke"):
            extra = val("$r1")
        self.log.append(("enter", self.name, stat(), extra))
        FinishBp(gdb.newest_frame(), self.log, self.name if extra is None
                 else "%s(%d)" % (self.name, extra))
        return False


class PhaseTrace(gdb.Command):
    """phase-trace N [ops]: run N lifecycles and print free bytes at every phase
    entry/return (and per op_init/op_invoke with 'ops')."""

    def __init__(self):
        super().__init__("phase-trace", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        args = arg.split()
        n = int(args[0]) if args else 2
        log = []
        names = PHASES + (["op_init", "op_invoke"] if "ops" in args else [])
        bps = [PhaseBp(p, log) for p in names]
        stop = gdb.Breakpoint("model_release", internal=True)
        stop.ignore_count = n  # stop at the (n+1)th release entry
        oom = gdb.Breakpoint("fw_oom", internal=True)
        gdb.execute("continue", to_string=True)
        for b in bps + [stop, oom]:
            b.delete()
        it = 0
        for kind, name, s, _extra in log:
            if kind == "enter" and name == "model_load":
                it += 1
            print("iter %d %-5s %-22s %s" % (it, kind, name, fmt(s)))
        print("stopped in:", gdb.selected_frame().name())


HeapStat()
PhaseTrace()


def freertos_blocks(inf):
    """Physical walk of heap_4 / heap_5, region by region."""
    key = canary()
    alloc_link = key if has_symbol("xHeapCanary") else 0
    out = []
    for start, marker in freertos_regions():
        b = start
        while b < marker and len(out) < 100000:
            raw = u32(inf, b + 4)
            size = raw & ~MSB
            if size == 0:
                out.append((b, 0, None, None, "bad-size"))
                break
            used = bool(raw & MSB)
            state = None
            if used:
                link = u32(inf, b)
                # NULL (<= V11.1.0) or NULL ^ canary (>= V11.2.0)
                state = "ok" if link in (0, alloc_link) else "link-broken(0x%x)" % link
            out.append((b, size, used, None, state))
            b += size
    return out


class HeapBlocks(gdb.Command):
    """heapblocks: one line per block, in address order:
    'block 0x<addr> size=<bytes> used|free [req=<n>] [canary=<state>]'.
    size is the allocator's own block size (heap4/5: header included, tlsf:
    payload); req and canary only where poisoning is built in."""

    def __init__(self):
        super().__init__("heapblocks", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        inf = gdb.selected_inferior()
        if is_tlsf():
            s = stat()
            rows = [(i, b) for i, h in enumerate(s["heaps"]) for b in h["blocks"]]
        elif is_heap4():
            rows = [(0, b) for b in freertos_blocks(inf)]
        else:
            print("heapblocks: heap4/heap5/tlsf only")
            return
        for heap, (addr, size, used, req, state) in rows:
            line = "block h%d 0x%08x size=%d %s" % (heap, addr, size, "used" if used else "free")
            if req is not None:
                line += " req=%d" % req
            if state is not None:
                line += " canary=%s" % state
            print(line)


HeapBlocks()


class FreeBp(gdb.Breakpoint):
    """Free bytes are at a local minimum right before every free: this is
    where the peaks inside a phase are caught."""

    def __init__(self, log):
        super().__init__("mem_free", internal=True)
        self.log = log

    def stop(self):
        self.log.append(("free", "mem_free", stat(), val("g_current_layer")))
        return False


class PhaseSummary(gdb.Command):
    """phase-summary N: run N lifecycles; per iteration print the README figures."""

    def __init__(self):
        super().__init__("phase-summary", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        n = int(arg or 2)
        log = []
        bps = [PhaseBp(p, log) for p in PHASES + ["op_init"]] + [FreeBp(log)]
        # op_init steps = difference between consecutive op_init entries; the
        # last one ends where graph_build calls planner_plan (the arena).
        plan = gdb.Breakpoint("planner_plan", internal=True)
        plan.silent = True
        PlanBp = type("PlanBp", (gdb.Breakpoint,), {"stop": lambda self: (
            log.append(("enter", "planner_plan", stat(), None)), False)[1]})
        plan.delete()
        bps.append(PlanBp("planner_plan", internal=True))
        stop = gdb.Breakpoint("model_load", internal=True)
        stop.ignore_count = n
        oom = gdb.Breakpoint("fw_oom", internal=True)
        gdb.execute("continue", to_string=True)
        for b in bps + [stop, oom]:
            b.delete()
        where = gdb.selected_frame().name()
        ops = [str(gdb.parse_and_eval("g_ops[%d].name" % i).string()) for i in range(15)]
        it, phase, infer_n = 0, None, 0
        rows = {}
        for kind, name, s, extra in log:
            f = s["free"]
            if kind == "enter" and name == "model_load":
                it += 1
                infer_n = 0
                rows[it] = r = {"steps": [], "peaks": {}}
                r["baseline"] = f
            r = rows[it]
            if kind == "enter" and name in PHASES:
                phase = name
                if name == "inference_run":
                    infer_n += 1
                    phase = "inference_run#%d" % infer_n
                r["peaks"][phase] = (f, None)
                r["enter " + phase] = f
            elif kind == "ret" and name in PHASES:
                r["ret " + phase] = f
                r["ratio " + phase] = s["largest"] / f if f else 0
                if f < r["peaks"][phase][0]:
                    r["peaks"][phase] = (f, None)
            elif kind == "enter" and name in ("op_init", "planner_plan") and phase == "graph_build":
                if "op_enter" in r:
                    r["steps"].append((ops[r["op_idx"]], r["op_enter"] - f))
                r["op_enter"], r["op_idx"] = f, extra
                if name == "planner_plan":
                    del r["op_enter"]
            elif kind == "free" and phase is not None:
                if f < r["peaks"][phase][0]:
                    r["peaks"][phase] = (f, extra)
        for i in sorted(rows):
            r = rows[i]
            g = r.get
            print("iteration %d (%s)" % (i, "complete" if "ret model_release" in r else "partial"))
            print("  baseline (model_load entry) free=%d" % r["baseline"])
            for ph in ["model_load", "graph_build", "inference_run#1", "model_switch",
                       "inference_run#2", "model_release"]:
                if "enter " + ph not in r:
                    continue
                pk, layer = r["peaks"][ph]
                lay = "" if layer is None or layer < 0 else " at layer %d (%s)" % (layer, ops[layer])
                print("  %-16s enter=%-6d peak(min free)=%-6d%s ret=%s  overhead=%d  ratio@ret=%.3f" % (
                    ph, r["enter " + ph], pk, lay, g("ret " + ph, "-"), r["enter " + ph] - pk,
                    g("ratio " + ph, 0)))
            st = r["steps"]
            if st:
                print("  op_init steps: " + ", ".join("%s=%d" % x for x in st))
                big = max(st, key=lambda x: x[1])
                print("  largest op_init step: %s %d; resident build (graph_build) %d" % (
                    big[0], big[1], r["enter graph_build"] - r.get("ret graph_build", 0)))
        print("stopped in:", where)


PhaseSummary()


class TensorOverlaps(gdb.Command):
    """tensor-overlaps: pairs in g_tensors whose lifetimes AND address ranges
    intersect (addr 0 = not placed in the arena, skipped)."""

    def __init__(self):
        super().__init__("tensor-overlaps", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        n = val("g_tensor_count")
        ts = []
        for i in range(n):
            t = gdb.parse_and_eval("g_tensors[%d]" % i)
            ts.append((t["name"].string(), int(t["addr"]), int(t["size"]),
                       int(t["producer"]), int(t["last_consumer"])))
        pairs = 0
        for i in range(n):
            for j in range(i + 1, n):
                a, b = ts[i], ts[j]
                if not a[1] or not b[1]:
                    continue
                if a[3] <= b[4] and b[3] <= a[4] and a[1] < b[1] + b[2] and b[1] < a[1] + a[2]:
                    pairs += 1
                    lo, hi = max(a[1], b[1]), min(a[1] + a[2], b[1] + b[2])
                    print("overlap: %s [L%d..L%d] and %s [L%d..L%d] share 0x%08x-0x%08x (%d bytes)" % (
                        a[0], a[3], a[4], b[0], b[3], b[4], lo, hi, hi - lo))
        print("%d overlapping pair(s) among %d tensors" % (pairs, n))


TensorOverlaps()
