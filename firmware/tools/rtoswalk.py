# rtoswalk.py - gdb-multiarch Python commands that read the RTOS firmware's tasks and heap on
# their own (no memlife), for the figures in firmware/README.md ("RTOS firmware") and as the
# independent reading memlife's task support is compared with.
#
#   (gdb) source tools/rtoswalk.py
#   (gdb) rtos-trace              attribute every heap block to the task that allocated it:
#                                 breakpoints on pvPortMalloc's entry, on the line inside it
#                                 where the block is taken (scheduler suspended: the running
#                                 task cannot change there) and on vPortFree, each recording
#                                 and continuing (install before `continue`, from reset)
#   (gdb) rtos-tasks [json]       every task: name, TCB, state (the list it is on), priority,
#                                 stack bounds, saved pc/sp/lr (decoded from the saved frame;
#                                 the running task's from the core), frame kind, high-water
#                                 mark (0xa5 bytes and words), its TCB and stack heap blocks
#   (gdb) rtos-heap [json]        the heap_4 walk, and per allocating task the live blocks and
#                                 bytes (rtos-trace's records, checked against the walk)
#   (gdb) rtos-break-when LOC EXPR  stop at LOC only when EXPR holds (evaluated by this
#                                 script: gdb's own conditions misbehaved here together with
#                                 rtos-trace's auto-continuing breakpoints)
#   (gdb) rtos-layers             one inference_run: the Infer stack's high-water mark after
#                                 each layer's op_invoke, and the layer where it fell most
#
# Layouts come from the ELF's DWARF through gdb (TCB_t, List_t, ListItem_t, BlockLink_t); the
# saved-frame shapes are the FreeRTOS ports': ARM_CM3 r4-r11 then the hardware frame (0x40
# bytes); ARM_CM4F r4-r11, EXC_RETURN, then the basic frame (0x44) or, EXC_RETURN bit 4 clear,
# s16-s31, the hardware frame, s0-s15, FPSCR and a reserved word (0xCC).
import json

import gdb

STACK_FILL = 0xA5
MSB = 0x80000000
HEAP_HEADER = 8

# live: payload address -> (size requested, task label); pending: task label -> size asked
# (between pvPortMalloc's entry and the line where it takes the block). Filled by rtos-trace.
TRACE = {"live": {}, "pending": {}, "allocs": 0, "frees": 0}


def val(expr):
    return gdb.parse_and_eval(expr)


def u32(addr):
    return int.from_bytes(gdb.selected_inferior().read_memory(addr, 4).tobytes(), "little")


def read(addr, n):
    return gdb.selected_inferior().read_memory(addr, n).tobytes()


def has(expr):
    try:
        val(expr)
        return True
    except gdb.error:
        return False


_CM4F = {}


def is_cm4f():
    # The Cortex-M4F port has a function of its own that the Cortex-M3 port lacks.
    if "yes" not in _CM4F:
        _CM4F["yes"] = has("vPortEnableVFP")
    return _CM4F["yes"]


def tcb_type():
    return gdb.lookup_type("TCB_t").pointer()


def task_name(tcb_addr):
    if tcb_addr == 0:
        return "-"
    tcb = gdb.Value(tcb_addr).cast(tcb_type()).dereference()
    return tcb["pcTaskName"].string(length=int(tcb["pcTaskName"].type.sizeof)).split("\0")[0]


def current_label():
    """Who runs now: "ISR n" in handler mode, "main" before the scheduler, else the task."""
    ipsr = int(val("$xpsr")) & 0x1FF
    if ipsr != 0:
        return "ISR %d" % ipsr
    if int(val("xSchedulerRunning")) == 0:
        return "main"
    tcb = int(val("pxCurrentTCB"))
    return "%s@0x%08x" % (task_name(tcb), tcb)


# ---------------------------------------------------------------------------------------------
# Lists and states


def list_owners(list_value):
    """The TCB addresses on a List_t, walked from xListEnd.pxNext, at most uxNumberOfItems."""
    end = int(list_value["xListEnd"].address)
    n = int(list_value["uxNumberOfItems"])
    owners = []
    item = list_value["xListEnd"]["pxNext"]
    for _ in range(n):
        if int(item) == end or int(item) == 0:
            break
        owners.append(int(item.dereference()["pvOwner"]))
        item = item.dereference()["pxNext"]
    return owners


def waits_forever(tcb_addr):
    """On xSuspendedTaskList but waiting on an event or a notification with portMAX_DELAY
    (FreeRTOS's eTaskGetState calls that Blocked too)."""
    tcb = gdb.Value(tcb_addr).cast(tcb_type()).dereference()
    if int(tcb["xEventListItem"]["pvContainer"]) != 0:
        return True
    notify = tcb["ucNotifyState"]
    n = notify.type.sizeof // notify[0].type.sizeof
    return any(int(notify[i]) == 1 for i in range(n))  # taskWAITING_NOTIFICATION


def task_states():
    """TCB address -> state, from the list each TCB is on (pxCurrentTCB: Running)."""
    states = {}
    ready = val("pxReadyTasksLists")
    count = ready.type.sizeof // ready[0].type.sizeof
    for prio in range(count):
        for tcb in list_owners(ready[prio]):
            states[tcb] = "Ready"
    lists = [("xDelayedTaskList1", "Blocked"), ("xDelayedTaskList2", "Blocked"),
             ("xPendingReadyList", "Ready (pending)"), ("xSuspendedTaskList", "Suspended"),
             ("xTasksWaitingTermination", "Deleted (awaiting idle)")]
    for name, state in lists:
        for tcb in list_owners(val(name)):
            states[tcb] = state
            if state == "Suspended" and waits_forever(tcb):
                states[tcb] = "Blocked (no timeout)"
    if int(val("xSchedulerRunning")) != 0:
        states[int(val("pxCurrentTCB"))] = "Running"
    return states


# ---------------------------------------------------------------------------------------------
# Saved context


def saved_frame(top):
    """Decode the frame PendSV (or the port's task start) left at pxTopOfStack."""
    regs = {"r%d" % (4 + i): u32(top + 4 * i) for i in range(8)}
    if is_cm4f():
        exc_return = u32(top + 0x20)
        extended = (exc_return & 0x10) == 0
        hw = 0x64 if extended else 0x24
        size = 0xCC if extended else 0x44
        kind = "extended (FPU) 0x%x" % size if extended else "basic 0x%x" % size
        regs["exc_return"] = exc_return
    else:
        hw, size, kind = 0x20, 0x40, "basic 0x40"
    names = ["r0", "r1", "r2", "r3", "r12", "lr", "pc", "xpsr"]
    for i, n in enumerate(names):
        regs[n] = u32(top + hw + 4 * i)
    sp = top + size + (4 if regs["xpsr"] & (1 << 9) else 0)
    regs["sp"] = sp
    return regs, kind


def symbol_at(pc):
    try:
        block = gdb.block_for_pc(pc)
        while block is not None and block.function is None:
            block = block.superblock
        name = block.function.name if block is not None else "?"
    except RuntimeError:
        name = "?"
    sal = gdb.find_pc_line(pc)
    where = "%s:%d" % (sal.symtab.filename.split("/")[-1], sal.line) if sal.symtab else ""
    return name, where


# ---------------------------------------------------------------------------------------------
# Heap (our heap4.c: FreeRTOS heap_4's layout)


def heap_blocks():
    """(header address, whole size, allocated) for every block, start to pxEnd."""
    start = int(val("&ucHeap[0]"))
    start = (start + 7) & ~7
    end = int(val("pxEnd"))
    blocks = []
    addr = start
    while addr < end and len(blocks) < 100000:
        raw = u32(addr + 4)
        size = raw & ~MSB
        if size == 0 or size % 8:
            raise gdb.GdbError("heap walk: bad block size 0x%x at 0x%08x" % (raw, addr))
        blocks.append((addr, size, bool(raw & MSB)))
        addr += size
    if addr != end:
        raise gdb.GdbError("heap walk ended at 0x%08x, not at pxEnd 0x%08x" % (addr, end))
    return blocks


def block_of(payload, blocks_by_header):
    b = blocks_by_header.get(payload - HEAP_HEADER)
    return b if b is not None and b[2] else None


# ---------------------------------------------------------------------------------------------
# Tasks


def all_tcbs(states):
    return sorted(states)


def hwm_bytes(px_stack, limit):
    data = read(px_stack, limit)
    n = 0
    while n < len(data) and data[n] == STACK_FILL:
        n += 1
    return n


def task_record(tcb_addr, state, blocks_by_header):
    tcb = gdb.Value(tcb_addr).cast(tcb_type()).dereference()
    px_stack = int(tcb["pxStack"])
    px_end = int(tcb["pxEndOfStack"])
    top = int(tcb["pxTopOfStack"])
    stack_block = block_of(px_stack, blocks_by_header)
    tcb_block = block_of(tcb_addr, blocks_by_header)
    # [pxStack, pxEndOfStack + 4): the port aligns the top down to 8 bytes, so a stack of an
    # odd number of words leaves its last word unused (its heap block says the full size).
    stack_bytes = px_end + 4 - px_stack
    rec = {
        "name": task_name(tcb_addr),
        "tcb": tcb_addr,
        "number": int(tcb["uxTCBNumber"]),
        "state": state,
        "priority": int(tcb["uxPriority"]),
        "static": int(tcb["ucStaticallyAllocated"]) != 0,
        "stack_low": px_stack,
        "stack_high": px_end + 4,
        "stack_bytes": stack_bytes,
        "top_of_stack": top,
        "hwm_bytes": hwm_bytes(px_stack, px_end + 4 - px_stack),
        "tcb_block": [tcb_block[0], tcb_block[1]] if tcb_block else None,
        "stack_block": [stack_block[0], stack_block[1]] if stack_block else None,
    }
    rec["hwm_words"] = rec["hwm_bytes"] // 4
    if state == "Running":
        rec["pc"], rec["sp"], rec["lr"] = (int(val("$pc")), int(val("$sp")), int(val("$lr")))
        rec["frame"] = "running (core registers)"
    else:
        regs, kind = saved_frame(top)
        rec["pc"], rec["sp"], rec["lr"], rec["frame"] = regs["pc"], regs["sp"], regs["lr"], kind
    rec["function"], rec["line"] = symbol_at(rec["pc"])
    return rec


def collect_tasks():
    states = task_states()
    blocks_by_header = {b[0]: b for b in heap_blocks()}
    return [task_record(t, states[t], blocks_by_header) for t in all_tcbs(states)]


def print_tasks(tasks):
    print("tick %d, %d tasks (uxCurrentNumberOfTasks %d), scheduler %s" % (
        int(val("xTickCount")), len(tasks), int(val("uxCurrentNumberOfTasks")),
        "running" if int(val("xSchedulerRunning")) else "not started"))
    for t in tasks:
        blocks = []
        if t["tcb_block"]:
            blocks.append("TCB block 0x%08x/%d" % tuple(t["tcb_block"]))
        if t["stack_block"]:
            blocks.append("stack block 0x%08x/%d" % tuple(t["stack_block"]))
        print("  %-10s #%-3d TCB 0x%08x  %-24s prio %d  stack [0x%08x, 0x%08x) %d B  "
              "hwm %d B (%d words)  %s" % (
                  t["name"], t["number"], t["tcb"], t["state"], t["priority"], t["stack_low"],
                  t["stack_high"], t["stack_bytes"], t["hwm_bytes"], t["hwm_words"],
                  "static" if t["static"] else ", ".join(blocks)))
        print("  %-10s      pc 0x%08x %s (%s)  sp 0x%08x  lr 0x%08x  frame %s" % (
            "", t["pc"], t["function"], t["line"], t["sp"], t["lr"], t["frame"]))


class RtosTasks(gdb.Command):
    """rtos-tasks [json]: every FreeRTOS task, read from the kernel's lists."""

    def __init__(self):
        super().__init__("rtos-tasks", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        tasks = collect_tasks()
        if arg.strip() == "json":
            print(json.dumps(tasks))
        else:
            print_tasks(tasks)


# ---------------------------------------------------------------------------------------------
# Allocation trace (which task allocated each live block)


class MallocEntry(gdb.Breakpoint):
    def stop(self):
        TRACE["pending"][current_label()] = int(val("$r0"))
        return False


def allocation_line():
    """heap4.c's line where pvPortMalloc has taken a block (pvReturn set, still suspended)."""
    symtab = gdb.lookup_global_symbol("pvPortMalloc").symtab
    with open(symtab.fullname()) as f:
        for number, text in enumerate(f, 1):
            if "xNumberOfSuccessfulAllocations++;" in text:
                return "%s:%d" % (symtab.filename, number)
    raise gdb.GdbError("no allocation line in %s" % symtab.filename)


class MallocTaken(gdb.Breakpoint):
    def stop(self):
        p = int(val("pvReturn"))
        who = current_label()
        requested = TRACE["pending"].pop(who, None)
        if p != 0:
            TRACE["live"][p] = (requested, who)
            TRACE["allocs"] += 1
        return False


class FreeEntry(gdb.Breakpoint):
    def stop(self):
        p = int(val("$r0"))
        if p != 0:
            TRACE["live"].pop(p, None)
            TRACE["frees"] += 1
        return False


class RtosTrace(gdb.Command):
    """rtos-trace: record, for every pvPortMalloc, the task that made it (auto-continue)."""

    def __init__(self):
        super().__init__("rtos-trace", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        MallocEntry("*pvPortMalloc", internal=True)
        MallocTaken(allocation_line(), internal=True)
        FreeEntry("*vPortFree", internal=True)
        print("rtos-trace: pvPortMalloc and vPortFree traced")


def heap_by_task():
    blocks = heap_blocks()
    used = {b[0] + HEAP_HEADER: b for b in blocks if b[2]}
    per_task = {}
    unknown = []
    for payload, (addr, size, _) in used.items():
        rec = TRACE["live"].get(payload)
        if rec is None:
            unknown.append(payload)
            continue
        requested, who = rec
        name = who.split("@")[0]
        t = per_task.setdefault(name, {"blocks": 0, "bytes": 0, "requested": 0, "tasks": set()})
        t["blocks"] += 1
        t["bytes"] += size
        t["requested"] += requested or 0
        t["tasks"].add(who)
    stale = [p for p in TRACE["live"] if p not in used]
    free = sum(b[1] for b in blocks if not b[2])
    return blocks, per_task, unknown, stale, free


class RtosHeap(gdb.Command):
    """rtos-heap [json]: the heap walk and the live blocks per allocating task."""

    def __init__(self):
        super().__init__("rtos-heap", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        blocks, per_task, unknown, stale, free = heap_by_task()
        if arg.strip() == "json":
            print(json.dumps({
                "free": free, "blocks": [list(b) for b in blocks],
                "by_task": {k: {"blocks": v["blocks"], "bytes": v["bytes"],
                                "requested": v["requested"]} for k, v in per_task.items()},
                "untraced": unknown, "stale": stale}))
            return
        used = [b for b in blocks if b[2]]
        print("heap: %d blocks, %d used (%d B), free %d B (xFreeBytesRemaining %d)" % (
            len(blocks), len(used), sum(b[1] for b in used), free,
            int(val("xFreeBytesRemaining"))))
        for name in sorted(per_task):
            t = per_task[name]
            print("  %-10s %3d blocks %6d B (requested %6d B)" % (
                name, t["blocks"], t["bytes"], t["requested"]))
        if unknown:
            sizes = {b[0] + HEAP_HEADER: b[1] for b in used}
            print("  untraced: %d blocks (allocated before rtos-trace): %s" % (
                len(unknown), ", ".join("0x%08x/%d" % (p, sizes[p]) for p in sorted(unknown))))
        if stale:
            print("  WARNING: %d traced blocks not in the walk" % len(stale))


class StopWhen(gdb.Breakpoint):
    def __init__(self, location, expr):
        super().__init__(location)
        self.expr = expr

    def stop(self):
        return int(val(self.expr)) != 0


class RtosBreakWhen(gdb.Command):
    """rtos-break-when LOCATION EXPR: a breakpoint that stops only when EXPR is non-zero."""

    def __init__(self):
        super().__init__("rtos-break-when", gdb.COMMAND_BREAKPOINTS)

    def invoke(self, arg, from_tty):
        location, _, expr = arg.strip().partition(" ")
        if not expr:
            raise gdb.GdbError("usage: rtos-break-when LOCATION EXPR")
        StopWhen(location, expr)


# ---------------------------------------------------------------------------------------------
# Per-layer stack depth of the inference task


class RtosLayers(gdb.Command):
    """rtos-layers: the Infer task's stack high-water mark after each layer of one inference."""

    def __init__(self):
        super().__init__("rtos-layers", gdb.COMMAND_RUNNING)

    def invoke(self, arg, from_tty):
        bp = gdb.Breakpoint("op_invoke", internal=True)
        bp.silent = True
        gdb.execute("continue", to_string=True)
        tcb = int(val("pxCurrentTCB"))
        t = gdb.Value(tcb).cast(tcb_type()).dereference()
        low, high = int(t["pxStack"]), int(t["pxEndOfStack"]) + 4
        rows = []
        for _ in range(int(val("N_LAYERS")) if has("N_LAYERS") else 15):
            layer = int(val("layer_index"))
            before = hwm_bytes(low, high - low)
            gdb.execute("finish", to_string=True)
            after = hwm_bytes(low, high - low)
            name = val("g_ops[%d].name" % layer).string()
            rows.append((layer, name, before, after))
            if layer == 14:
                break
            gdb.execute("continue", to_string=True)
        bp.delete()
        print("Infer stack [0x%08x, 0x%08x), %d B" % (low, high, high - low))
        for layer, name, before, after in rows:
            mark = "  <- deeper" if after < before else ""
            print("  layer %2d %-8s hwm %5d B (%4d words)%s" % (layer, name, after, after // 4,
                                                               mark))
        fell = [r for r in rows if r[3] < r[2]]
        if fell:
            deepest = min(fell, key=lambda r: r[3])
            print("smallest margin %d B (%d words), reached in layer %d %s" % (
                deepest[3], deepest[3] // 4, deepest[0], deepest[1]))
        else:
            print("no layer went deeper than before this inference (margin %d B, %d words)" % (
                rows[-1][3], rows[-1][3] // 4))


RtosTasks()
RtosTrace()
RtosHeap()
RtosLayers()
RtosBreakWhen()
