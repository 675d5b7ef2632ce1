# The firmware's own heap figures, as gdb reads them: `g_firmware_view`, which test builds of
# the firmware fill from their own API (vPortGetHeapStats, mallinfo, heap_caps_get_info...) right
# before each call to model_release. gdb decodes the struct from DWARF by itself; this prints it
# as one JSON line prefixed with "REF-FV " (structs as objects, arrays as lists, by field name).
import json

import gdb


def to_py(v):
    t = v.type.strip_typedefs()
    if t.code == gdb.TYPE_CODE_STRUCT or t.code == gdb.TYPE_CODE_UNION:
        return {f.name: to_py(v[f.name]) for f in t.fields() if f.name}
    if t.code == gdb.TYPE_CODE_ARRAY:
        lo, hi = t.range()
        return [to_py(v[i]) for i in range(lo, hi + 1)]
    return int(v)


class RefFv(gdb.Command):
    """Print g_firmware_view as JSON (one line, prefixed REF-FV)."""

    def __init__(self):
        super().__init__("ref-fv", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        print("REF-FV " + json.dumps(to_py(gdb.parse_and_eval("g_firmware_view"))))


RefFv()
