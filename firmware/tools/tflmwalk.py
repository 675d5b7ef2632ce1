# tflmwalk.py - gdb-multiarch Python helpers to measure the TensorFlow Lite Micro firmware
# (tflm/, README "TensorFlow Lite Micro firmware"), independently of memlife: sourced after
# heapwalk.py (stat(): heap4's free bytes, walked) and cppwalk.py (site_of, and Returns,
# which finds a call's return by its SP).
#
#   (gdb) tflm-arena          the running cycle's arena and tensor table (at any stop
#                             where app::g_session is set)
#   (gdb) tflm-summary N      run N cycles; per model and cycle: free heap per phase, the allocations
#                             and their sites, the plan while the planner exists, the arena
#                             after AllocateTensors, every tensor with its offset and
#                             lifetime, overlapping live tensors, the bytes a release left
#
# What it reads (TFLM 2020 names, checked in the DWARF): app::g_session->interpreter, a
# tflite::MicroInterpreter {context_ (TfLiteContext: tensors_size, tensors), allocator_ (a
# tflite::MicroAllocator by value: memory_allocator_, a tflite::SimpleMemoryAllocator
# {buffer_head_, buffer_tail_, head_, tail_})}; during AllocateTensors the
# tflite::GreedyMemoryPlanner (`this` of GetMaximumMemorySize) and the caller's local
# tmp_allocator. Tensor lifetimes come from the model flatbuffer in RAM (the session's
# model_file), parsed here, as TFLM's AllocationInfoBuilder derives them.
import struct

import gdb

PHASES = [
    ("app::LoadModel", "load"),
    ("app::BuildInterpreter", "build"),
    ("app::RunInference", "inference"),
    ("app::ReleaseModel", "release"),
    ("app::HandleBuildFailure", "build-failure"),
]
# GreedyMemoryPlanner's bookkeeping per buffer: BufferRequirements (3 ints), a size and an
# id sorted by size, a ListEntry (3 ints) and an offset.
PLANNER_BYTES_PER_BUFFER = 36


def function_entry(spec):
    """Address of the first instruction of function `spec`, from its symbol. Not through
    the block at its first line, as cppwalk's entry_of: GetMaximumMemorySize begins with
    an inlined CalculateOffsetsIfNeeded, so that block belongs to no function and the
    function's own block starts 24 bytes into it."""
    sym = gdb.lookup_symbol(spec)[0]
    if sym is None or not sym.is_function:
        raise gdb.GdbError("tflmwalk: no function %s" % spec)
    return int(sym.value().address)


def num(value):
    return int(value)


def cstr(value):
    try:
        return value.string() if num(value) else ""
    except gdb.error:
        return "?"


# --- the model flatbuffer, read from target memory ---

class Flatbuffer:
    """The few fields of a .tflite file the lifetimes need: subgraph 0's tensor count,
    inputs, outputs and each operator's inputs and outputs."""

    def __init__(self, data):
        self.d = data
        root = self.ref(0)
        model = self.table(root)
        subgraph = self.table(self.ref(self.vector(model(2))[0]))
        self.tensor_count = len(self.vector(subgraph(0)))
        self.inputs = self.ints(subgraph(1))
        self.outputs = self.ints(subgraph(2))
        self.operators = []
        for op_at in self.vector(subgraph(3)):
            op = self.table(self.ref(op_at))
            self.operators.append((self.ints(op(1)), self.ints(op(2))))

    def u32(self, at):
        return struct.unpack_from("<I", self.d, at)[0]

    def ref(self, at):
        return at + self.u32(at)

    def table(self, at):
        vtable = at - struct.unpack_from("<i", self.d, at)[0]
        vlen = struct.unpack_from("<H", self.d, vtable)[0]

        def field(i):
            if 4 + 2 * i >= vlen:
                return None
            off = struct.unpack_from("<H", self.d, vtable + 4 + 2 * i)[0]
            return at + off if off else None
        return field

    def vector(self, at):
        """Addresses of the elements of the vector whose offset is at `at`."""
        if at is None:
            return []
        v = self.ref(at)
        return [v + 4 + 4 * k for k in range(self.u32(v))]

    def ints(self, at):
        return [struct.unpack_from("<i", self.d, e)[0] for e in self.vector(at)]


def lifetimes(fb):
    """tensor -> (first, last) operator, as TFLM 2020's AllocationInfoBuilder::AddTensors:
    model inputs from 0, model outputs to the last operator, else first writer to last
    reader. Tensors no operator writes (weights) are left out."""
    first = {t: 0 for t in fb.inputs}
    last = {t: len(fb.operators) - 1 for t in fb.outputs}
    for i, (ins, outs) in enumerate(fb.operators):
        for t in ins:
            last[t] = max(last.get(t, i), i)
        for t in outs:
            first[t] = min(first.get(t, i), i)
    return {t: (first[t], last.get(t, first[t])) for t in first}


# --- the arena and the tensors of a live interpreter ---

def arena_of(interpreter):
    sma = interpreter["allocator_"]["memory_allocator_"].dereference()
    bh, bt, h, t = (num(sma[f]) for f in ("buffer_head_", "buffer_tail_", "head_", "tail_"))
    return dict(sma=num(interpreter["allocator_"]["memory_allocator_"]), buffer_head=bh,
                buffer_tail=bt, head=h, tail=t, head_used=h - bh, tail_used=bt - t,
                used=(h - bh) + (bt - t), gap=t - h)


def fmt_arena(a, block=None):
    where = ""
    if block is not None:
        start, size = block
        where = "block 0x%08x %d B (%d lost to alignment), " % (start, size, a["buffer_head"] - start)
    return ("%sbuffer_head_ 0x%08x buffer_tail_ 0x%08x (%d B) head_ +%d tail_ -%d: "
            "head %d, tail %d, arena_used_bytes %d, free gap %d" % (
                where, a["buffer_head"], a["buffer_tail"], a["buffer_tail"] - a["buffer_head"],
                a["head_used"], a["tail_used"], a["head_used"], a["tail_used"], a["used"],
                a["gap"]))


def tensors_of(interpreter, arena, model_file):
    ctx = interpreter["context_"]
    table = ctx["tensors"]
    mstart, mend = model_file
    out = []
    for i in range(num(ctx["tensors_size"])):
        t = table[i]
        data = num(t["data"]["raw"])
        if arena["buffer_head"] <= data < arena["buffer_tail"]:
            where = ("arena", data - arena["buffer_head"])
        elif mstart <= data < mend:
            where = ("model", data - mstart)
        else:
            where = ("other", data)
        out.append(dict(index=i, name=cstr(t["name"]), type=str(t["type"]), bytes=num(t["bytes"]),
                        data=data, where=where, alloc=str(t["allocation_type"])))
    return out


def scratch_of(interpreter, arena):
    """The planned scratch buffers: (buffer index, node, bytes, arena offset). The handles
    sit in the tail, newest first (RequestScratchBufferInArena's order reversed)."""
    allocator = interpreter["allocator_"]
    count = num(allocator["scratch_buffer_count_"])
    handles = allocator["scratch_buffer_handles_"]
    out = []
    for k in range(count):
        h = handles[count - 1 - k]
        out.append((k, num(h["node_idx"]), num(h["bytes"]), num(h["data"]) - arena["buffer_head"]))
    return out


def session():
    s = gdb.parse_and_eval("app::g_session")
    if num(s) == 0:
        raise gdb.GdbError("tflmwalk: no session (app::g_session is nullptr between cycles)")
    return s.dereference()


def model_of(sess):
    start = num(sess["model_file"])
    size = num(sess["model_file_bytes"])
    data = bytes(gdb.selected_inferior().read_memory(start, size))
    return Flatbuffer(data), (start, start + size)


def scratch_as_tensors(scratch, lives):
    """Scratch buffers as table rows ("s<k>"), live at their node only; adds their lifetimes
    to `lives` under the keys ("scratch", k)."""
    rows = []
    for k, node, size, offset in scratch:
        key = ("scratch", k)
        lives[key] = (node, node)
        rows.append(dict(index=key, name="scratch buffer %d" % k, type="scratch", bytes=size,
                         where=("arena", offset), alloc="scratch"))
    return rows


def overlaps(tensors, lives):
    """Pairs of arena tensors (and scratch buffers) whose bytes intersect while both are
    live."""
    pairs = []
    arena = [t for t in tensors if t["where"][0] == "arena" and t["index"] in lives]
    for i, a in enumerate(arena):
        for b in arena[i + 1:]:
            la, lb = lives[a["index"]], lives[b["index"]]
            lo = max(a["where"][1], b["where"][1])
            hi = min(a["where"][1] + a["bytes"], b["where"][1] + b["bytes"])
            if lo < hi and la[0] <= lb[1] and lb[0] <= la[1]:
                pairs.append((a, b, lo, hi))
    return pairs


def label(index):
    return "s%d" % index[1] if isinstance(index, tuple) else "t%d" % index


def print_tensors(tensors, lives):
    for t in tensors:
        kind, off = t["where"]
        where = "%s+%d" % (kind, off) if kind != "other" else "0x%08x" % off
        life = lives.get(t["index"])
        span = "ops %d..%d" % life if life else "-"
        print("    %-3s %-12s %6d B  %-13s %-10s %s" % (
            label(t["index"]), t["type"].replace("kTfLite", ""), t["bytes"], where, span,
            t["name"]))
    pairs = overlaps(tensors, lives)
    for a, b, lo, hi in pairs:
        print("    OVERLAP: %s %s (ops %d..%d) and %s %s (ops %d..%d) share arena+%d..+%d (%d B)" % (
            label(a["index"]), a["name"], *lives[a["index"]], label(b["index"]), b["name"],
            *lives[b["index"]], lo, hi, hi - lo))
    print("    %d overlapping live pair(s)" % len(pairs))


class TflmArena(gdb.Command):
    """tflm-arena: the running cycle's arena (SimpleMemoryAllocator) and tensor table."""

    def __init__(self):
        super().__init__("tflm-arena", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        sess = session()
        interp = sess["interpreter"].dereference()
        a = arena_of(interp)
        print(cstr(sess["spec"]["name"]) + ": " +
              fmt_arena(a, (num(sess["arena"]), num(sess["arena_bytes"]))))
        fb, model = model_of(sess)
        lives = lifetimes(fb)
        rows = tensors_of(interp, a, model) + scratch_as_tensors(scratch_of(interp, a), lives)
        print_tensors(rows, lives)


TflmArena()


# --- tflm-summary ---

class Cycle:
    """One model's session: LoadModel to ReleaseModel (two of them overlap in two-models)."""

    def __init__(self, cycle, model, free):
        self.index, self.model, self.start_free = cycle, model, free
        self.phases = []      # [label, enter free, min free, return free]
        self.allocs = []      # (phase, size, ptr, site)
        self.frees = 0
        self.plan = None
        self.arena = None     # at AllocateTensors' return
        self.status = None
        self.tensors = None   # at RunInference's entry
        self.lives = None
        self.block = None
        self.report = None    # TFLM's last report, on a failed build
        self.tail = []        # arena allocations from the tail: (node, caller, size, drop, temp)
        self.ops = {}         # node -> operator name


class Summary:
    """The sessions seen, and the phases open now: an event belongs to the session of the
    innermost open phase."""

    def __init__(self):
        self.cycles = []
        self.by_session = {}  # Session* -> Cycle
        self.open = []        # [label, Cycle, phase entry]
        self.planner_seen = False

    def cycle(self):
        return self.open[-1][1] if self.open else None

    def phase(self):
        return self.open[-1][0] if self.open else "outside"

    def note_free(self, free):
        for _label, _cycle, entry in self.open:
            entry[2] = min(entry[2], free)


TFLM = Summary()


def free_now():
    return stat()["free"]


class TflmPhaseEntry(gdb.Breakpoint):
    """A lifecycle function: LoadModel(spec) starts a session (the Session* it returns
    names it); the others take the session as their first argument."""

    def __init__(self, spec, label):
        super().__init__("*0x%x" % function_entry(spec), internal=True)
        self.label = label

    def stop(self):
        free = free_now()
        arg = int(gdb.parse_and_eval("(unsigned)$r0"))
        if self.label == "load":
            spec = gdb.parse_and_eval("(const app::ModelSpec *)%d" % arg).dereference()
            c = Cycle(int(gdb.parse_and_eval("app::g_cycle")) + 1, cstr(spec["name"]), free)
            TFLM.cycles.append(c)
        else:
            c = TFLM.by_session.get(arg)
        if c is None:
            return False
        entry = [self.label, free, free, None]
        opened = [self.label, c, entry]
        c.phases.append(entry)
        TFLM.open.append(opened)
        if self.label == "inference":
            self.read_tensors(c)
        if self.label == "build-failure":
            c.report = gdb.parse_and_eval("g_tflm_last_report").string()

        def returned():
            entry[3] = free_now()
            entry[2] = min(entry[2], entry[3])
            if opened in TFLM.open:
                TFLM.open.remove(opened)
            if self.label == "load":
                TFLM.by_session[int(gdb.parse_and_eval("(unsigned)$r0"))] = c
        Returns.watch(returned)
        return False

    @staticmethod
    def read_tensors(c):
        sess = session()
        interp = sess["interpreter"].dereference()
        fb, model = model_of(sess)
        a = arena_of(interp)
        c.lives = lifetimes(fb)
        c.tensors = tensors_of(interp, a, model) + scratch_as_tensors(scratch_of(interp, a),
                                                                     c.lives)


class AllocateTensorsEntry(gdb.Breakpoint):
    def __init__(self):
        super().__init__("*0x%x" % function_entry("tflite::MicroInterpreter::AllocateTensors"),
                         internal=True)

    def stop(self):
        this = gdb.parse_and_eval("(tflite::MicroInterpreter *)$r0").dereference()
        TFLM.planner_seen = False

        def returned():
            c = TFLM.cycle()
            c.status = int(gdb.parse_and_eval("(int)$r0"))
            c.arena = arena_of(this)
            sess = session()
            c.block = (num(sess["arena"]), num(sess["arena_bytes"]))
            c.ops = op_names(this, len(model_of(sess)[0].operators))
        Returns.watch(returned)
        return False


class PlannerEntry(gdb.Breakpoint):
    """The first GetMaximumMemorySize of a build: FinishTensorAllocation's size check, with
    the plan's arrays still in the arena's free gap."""

    def __init__(self):
        super().__init__(
            "*0x%x" % function_entry("tflite::GreedyMemoryPlanner::GetMaximumMemorySize"),
            internal=True)

    def stop(self):
        if TFLM.planner_seen:
            return False
        TFLM.planner_seen = True
        frame = gdb.newest_frame()
        this_ptr = num(gdb.parse_and_eval("$r0"))
        try:
            tmp = frame.older().read_var("tmp_allocator")
            sma = frame.older().read_var("this")["memory_allocator_"].dereference()
            info_bytes = num(sma["tail_"]) - num(tmp["tail_"])
            planner_area = (num(tmp["buffer_head_"]), num(tmp["tail_"]))
        except (gdb.error, ValueError):
            info_bytes, planner_area = None, None

        def returned():
            p = gdb.parse_and_eval("(tflite::GreedyMemoryPlanner *)%d" % this_ptr).dereference()
            count = num(p["buffer_count_"])
            buffers = []
            for i in range(count):
                r = p["requirements_"][i]
                buffers.append((num(r["size"]), num(r["first_time_used"]),
                                num(r["last_time_used"]), num(p["buffer_offsets_"][i])))
            TFLM.cycle().plan = dict(head=int(gdb.parse_and_eval("(unsigned)$r0")), count=count,
                                  max_count=num(p["max_buffer_count_"]), buffers=buffers,
                                  info_bytes=info_bytes, area=planner_area)
        Returns.watch(returned)
        return False


# TFLM's BuiltinOperator numbers (schema) of the operators these models use.
BUILTIN_NAMES = {3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 6: "DEQUANTIZE", 9: "FULLY_CONNECTED",
                 17: "MAX_POOL_2D", 25: "SOFTMAX", 114: "QUANTIZE"}


def op_names(interpreter, count):
    """Node index -> operator name, from each node's registration (once resolved)."""
    names = {}
    nodes = interpreter["node_and_registrations_"]
    for i in range(count if num(nodes) else 0):
        reg = nodes[i]["registration"]
        if num(reg):
            code = num(reg.dereference()["builtin_code"])
            names[i] = BUILTIN_NAMES.get(code, "builtin %d" % code)
    return names


class TflmTailEntry(gdb.Breakpoint):
    """SimpleMemoryAllocator::AllocateFromTail: every persistent arena allocation (and the
    plan's temporary AllocationInfo, from the planning allocator: marked temp), with the
    node whose Init or Prepare asked (the context helper's current_node_idx_; -1 outside)."""

    def __init__(self):
        super().__init__(
            "*0x%x" % function_entry("tflite::SimpleMemoryAllocator::AllocateFromTail"),
            internal=True)

    def stop(self):
        c = TFLM.cycle()
        if c is None or num(gdb.parse_and_eval("app::g_session")) == 0:
            return False
        this = gdb.parse_and_eval("(tflite::SimpleMemoryAllocator *)$r0").dereference()
        size = int(gdb.parse_and_eval("(unsigned)$r1"))
        before = num(this["tail_"])
        interp = session()["interpreter"]
        node, temp = -1, False
        if num(interp):
            interp = interp.dereference()
            node = num(interp["context_helper_"]["current_node_idx_"])
            temp = num(interp["allocator_"]["memory_allocator_"]) != num(this.address)
        caller = site_of(gdb.newest_frame().older())

        def returned():
            ptr = int(gdb.parse_and_eval("(unsigned)$r0"))
            c.tail.append((node, caller, size, before - ptr if ptr else None, temp))
        Returns.watch(returned)
        return False


class TflmMallocEntry(gdb.Breakpoint):
    def __init__(self):
        super().__init__("*0x%x" % function_entry("pvPortMalloc"), internal=True)

    def stop(self):
        c = TFLM.cycle()
        if c is None:
            return False
        size = int(gdb.parse_and_eval("(unsigned)$r0"))
        site = site_of(gdb.newest_frame().older())
        phase = TFLM.phase()

        def returned():
            ptr = int(gdb.parse_and_eval("(unsigned)$r0"))
            c.allocs.append((phase, size, ptr, site))
            TFLM.note_free(free_now())
        Returns.watch(returned)
        return False


class TflmFreeEntry(gdb.Breakpoint):
    def __init__(self):
        super().__init__("*0x%x" % function_entry("vPortFree"), internal=True)

    def stop(self):
        c = TFLM.cycle()
        if c is not None and int(gdb.parse_and_eval("(unsigned)$r0")):
            c.frees += 1
        return False


def report_cycle(c):
    print("cycle %d: %s, free at LoadModel entry %d" % (c.index, c.model, c.start_free))
    for label, enter, low, ret in c.phases:
        print("  %-13s enter %-6d lowest %-6d return %-6s" % (
            label, enter, low, ret if ret is not None else "-"))
    for phase, size, ptr, site in c.allocs:
        print("    alloc in %-9s %6d B at 0x%08x  %s" % (phase, size, ptr, site))
    print("    %d frees" % c.frees)
    if c.plan:
        p = c.plan
        temp = (p["info_bytes"] or 0) + PLANNER_BYTES_PER_BUFFER * p["count"]
        print("  plan (first GetMaximumMemorySize): head needed %d B, %d buffers (room for %d), "
              "AllocationInfo %s B below the tail, planner arrays %d B: temp peak %d B" % (
                  p["head"], p["count"], p["max_count"], p["info_bytes"],
                  PLANNER_BYTES_PER_BUFFER * p["count"], temp))
        for i, (size, first, last, off) in enumerate(p["buffers"]):
            print("    buffer %d: %6d B ops %d..%d offset %d" % (i, size, first, last, off))
    if c.tail:
        print("  arena tail allocations (node, count x size requested -> tail drop each, caller;"
              " in order of first appearance):")
        steps = {}
        counts = {}  # equal allocations counted (dicts keep their first-insertion order)
        for row in c.tail:
            counts[row] = counts.get(row, 0) + 1
            node, _caller, _size, drop, temp = row
            if not temp and drop is not None:
                steps[node] = steps.get(node, 0) + drop
        for (node, caller, size, drop, temp), count in counts.items():
            print("    node %2d %-17s %2d x %5d B -> %-5s %s%s" % (
                node, c.ops.get(node, ""), count, size, drop, caller,
                "  (planning, temporary)" if temp else ""))
        print("    persistent bytes per node: " + ", ".join(
            "%d: %d" % (n, b) for n, b in sorted(steps.items())) +
            " (sum %d)" % sum(steps.values()))
        if c.arena:
            # CreateInPlaceSimpleMemoryAllocator's AllocateFromTail is inlined: not traced.
            print("    tail used %d - traced %d = %d B untraced (the SimpleMemoryAllocator "
                  "object itself, at the top)" % (c.arena["tail_used"], sum(steps.values()),
                                                  c.arena["tail_used"] - sum(steps.values())))
    if c.arena:
        ok = "ok" if c.status == 0 else "FAILED (%d)" % c.status
        print("  AllocateTensors %s: %s" % (ok, fmt_arena(c.arena, c.block)))
        if c.plan and c.status != 0:
            print("    missing: head needs %d B, the gap had %d B: %d B short" % (
                c.plan["head"], c.arena["gap"], c.plan["head"] - c.arena["gap"]))
    if c.report:
        print("  TFLM's last report: %s" % c.report)
    if c.tensors is not None:
        print("  tensors at RunInference entry:")
        print_tensors(c.tensors, c.lives)
    release = [p for p in c.phases if p[0] == "release" and p[3] is not None]
    if release:
        print("  after release: free %d, %d B less than at LoadModel entry" % (
            release[-1][3], c.start_free - release[-1][3]))


class TflmSummary(gdb.Command):
    """tflm-summary N: run N cycles of the TFLM firmware and report each."""

    def __init__(self):
        super().__init__("tflm-summary", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        n = int(arg or 3)
        bps = [TflmPhaseEntry(spec, label) for spec, label in PHASES]
        bps += [AllocateTensorsEntry(), PlannerEntry(), TflmTailEntry(), TflmMallocEntry(),
                TflmFreeEntry()]
        stop = gdb.Breakpoint("*0x%x" % function_entry("app::RunCycle"), internal=True)
        stop.ignore_count = n
        fail = gdb.Breakpoint("board::Fail", internal=True)
        print("start: " + fmt(stat()))
        gdb.execute("continue", to_string=True)
        for b in bps + [stop, fail] + list(Returns.by_addr.values()):
            b.delete()
        Returns.by_addr.clear()
        where = gdb.selected_frame().name()
        for c in TFLM.cycles:
            if c.index <= n:
                report_cycle(c)
        print("stopped in:", where)


TflmSummary()
