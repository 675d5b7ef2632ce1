# tflmcurrentwalk.py - gdb commands for firmware/tflm-current (our model of current TFLM):
# an independent reading of one build's persistent arena allocations, for the arena
# observer's end-to-end test (debugger/cli/tests/arena_current_e2e.rs). Load with
# `source firmware/tools/tflmcurrentwalk.py` in gdb-multiarch attached to QEMU at reset.
#
#   tflm-current-walk   runs to the first RunInference and prints, in order, every call of
#                       SingleArenaBufferAllocator::AllocatePersistentBuffer:
#                         step NODE STAGE SIZE ALIGN MOVED
#                       (NODE -1 outside the operator loops; STAGE construct, setup, init,
#                       prepare, finish; MOVED: how far the tail moved, read from tail_ at
#                       the next call or at the end), then the arena at RunInference:
#                         arena buffer_head 0x.. buffer_tail 0x.. head H tail T used U
#
# gdb reads the objects by their DWARF names; nothing of memlife is used.
import gdb

ALLOC = "tflite::micro::SingleArenaBufferAllocator"


class _Stop(gdb.Breakpoint):
    def __init__(self, spec, on_hit, halt=False):
        super().__init__(spec, internal=True)
        self.on_hit = on_hit
        self.halt = halt

    def stop(self):
        self.on_hit()
        return self.halt


class Walk(gdb.Command):
    def __init__(self):
        super().__init__("tflm-current-walk", gdb.COMMAND_USER)

    def invoke(self, arg, from_tty):
        calls = []  # (this, tail_before, size, align, node, stage)
        state = {"stage": "construct", "node_loop": False}

        def reg(name):
            return int(gdb.parse_and_eval("$" + name)) & 0xFFFFFFFF

        def on_tail():
            this = reg("r0")
            tail = int(gdb.parse_and_eval("((%s*)%d)->tail_" % (ALLOC, this)))
            node = -1
            if state["node_loop"]:
                node = int(gdb.parse_and_eval(
                    "app::g_session.interpreter->graph_.current_operator_index_"))
            calls.append((this, tail, reg("r1"), reg("r2"), node, state["stage"]))

        def stage(name, loop):
            def hit():
                state["stage"] = name
                state["node_loop"] = loop
            return hit

        stops = [
            _Stop(ALLOC + "::AllocatePersistentBuffer", on_tail),
            _Stop("tflite::micro::MicroInterpreter::AllocateTensors", stage("setup", False)),
            _Stop("tflite::micro::MicroInterpreterGraph::InitSubgraphs", stage("init", True)),
            _Stop("tflite::micro::MicroInterpreterGraph::PrepareSubgraphs",
                  stage("prepare", True)),
            _Stop("tflite::micro::MicroAllocator::FinishModelAllocation", stage("setup", False)),
            _Stop("tflite::micro::GreedyMemoryPlanner::GetMaximumMemorySize",
                  stage("finish", False)),
            _Stop("app::RunInference", lambda: None, halt=True),
        ]
        gdb.execute("continue", to_string=True)
        interp = "app::g_session.interpreter"
        # From the interface pointer back to the object: gdb's cast adjusts for the base.
        alloc = gdb.parse_and_eval(
            "*(%s*)%s->allocator_.persistent_buffer_allocator_" % (ALLOC, interp))
        cur = {k: int(alloc[k]) for k in ("buffer_head_", "buffer_tail_", "head_", "tail_")}
        for i, (this, tail, size, align, node, stg) in enumerate(calls):
            nxt = calls[i + 1][1] if i + 1 < len(calls) else cur["tail_"]
            print("step %d %s %d %d %d" % (node, stg, size, align, tail - nxt))
        print("arena buffer_head 0x%x buffer_tail 0x%x head %d tail %d used %d" % (
            cur["buffer_head_"], cur["buffer_tail_"], cur["head_"] - cur["buffer_head_"],
            cur["buffer_tail_"] - cur["tail_"], int(gdb.parse_and_eval("app::g_arena_used_bytes"))))
        for s in stops:
            s.delete()


Walk()
