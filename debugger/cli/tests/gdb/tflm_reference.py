# TensorFlow Lite Micro's arena as gdb reads it, for tflm_e2e.rs: an independent reading that
# starts from the firmware's own session (app::Session: the arena it handed over, its
# interpreter) and follows TFLM 2020's members with gdb's own DWARF decoding. memlife finds
# the arena without the application's help; the two must agree.
#
#   (gdb) ref-tflm [SESSION]    SESSION: an app::Session* expression, default app::g_session
#
# Prints one line "REF-TFLM {json}" (or "REF-TFLM null" without a session): the session's
# arena, and with an interpreter its allocator's cursors, MicroAllocator::active_, the
# tensors' data pointers and bytes, each operator's registration (builtin name, custom name),
# the scratch buffer handles and, when the firmware keeps it, g_tflm_view.
import json

import gdb


def u(v):
    return int(v) & 0xFFFFFFFF


def builtin_name(code):
    """The BuiltinOperator enumerator gdb names for code, without its prefix."""
    name = str(gdb.parse_and_eval("(tflite::BuiltinOperator)%d" % code))
    return name.split("BuiltinOperator_")[-1]


def c_string(ptr):
    if u(ptr) == 0:
        return None
    return ptr.string(length=64)


def interpreter(it):
    i = it.dereference()
    ma = i["allocator_"]
    alloc = ma["memory_allocator_"]
    a = alloc.dereference()
    out = {
        "allocator": u(alloc),
        "model": u(i["model_"]),
        "buffer_head": u(a["buffer_head_"]),
        "buffer_tail": u(a["buffer_tail_"]),
        "head": u(a["head_"]),
        "tail": u(a["tail_"]),
        "active": bool(ma["active_"]),
        "tensors_allocated": bool(i["tensors_allocated_"]),
    }
    ctx = i["context_"]
    tensors = []
    if out["tensors_allocated"]:
        t = ctx["tensors"]
        for k in range(int(ctx["tensors_size"])):
            tensors.append({"data": u(t[k]["data"]["raw"]), "bytes": int(t[k]["bytes"])})
    out["tensors"] = tensors
    scratch = []
    handles = ma["scratch_buffer_handles_"]
    count = int(ma["scratch_buffer_count_"])
    for k in range(count):
        h = handles[k]
        # Newest first: handle count-1-k is buffer k.
        scratch.append({"index": count - 1 - k, "data": u(h["data"]), "bytes": int(h["bytes"]),
                        "node": int(h["node_idx"])})
    out["scratch"] = sorted(scratch, key=lambda s: s["index"])
    return out


def registrations(it, count):
    nodes = it.dereference()["node_and_registrations_"]
    ops = []
    for k in range(count):
        node = nodes[k]
        reg = node["registration"].dereference()
        custom = c_string(reg["custom_name"])
        ins = node["node"]["inputs"].dereference()
        outs = node["node"]["outputs"].dereference()
        ops.append({
            "name": custom if custom is not None else builtin_name(int(reg["builtin_code"])),
            "inputs": [int(ins["data"][j]) for j in range(int(ins["size"]))],
            "outputs": [int(outs["data"][j]) for j in range(int(outs["size"]))],
        })
    return ops


class RefTflm(gdb.Command):
    """Print the session's TFLM arena as JSON (one line, prefixed REF-TFLM)."""

    def __init__(self):
        super().__init__("ref-tflm", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        args = gdb.string_to_argv(arg)
        expr = args[0] if args else "app::g_session"
        s = gdb.parse_and_eval("(app::Session *)(%s)" % expr)
        if u(s) == 0:
            print("REF-TFLM null")
            return
        sess = s.dereference()
        it = sess["interpreter"]
        out = {
            "arena": u(sess["arena"]),
            "arena_bytes": int(sess["arena_bytes"]),
            "interpreter": u(it),
            "model_name": str(sess["spec"].dereference()["name"].string()),
        }
        if u(it) != 0:
            out.update(interpreter(it))
            if len(args) > 1:
                out["operators"] = registrations(it, int(args[1]))
        try:
            view = gdb.parse_and_eval("app::g_tflm_view")
        except gdb.error:
            view = None  # only the view build keeps it
        last = int(view["last_model"]) if view is not None else -1
        if last >= 0 and int(view["captures"]) > 0:
            m = view["models"][last]
            out["view"] = {
                "captures": int(view["captures"]),
                "arena": u(m["arena"]),
                "arena_used_bytes": int(m["arena_used_bytes"]),
                "tensors": int(m["tensors"]),
                "operators": int(m["operators"]),
            }
        print("REF-TFLM " + json.dumps(out))


RefTflm()
