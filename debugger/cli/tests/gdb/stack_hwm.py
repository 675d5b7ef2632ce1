# The RTOS firmware's own stack figures, as gdb reads them: the hwm build's StackMon task
# stores, for every task, its handle, name and uxTaskGetStackHighWaterMark() in `g_stack_hwm`
# (firmware/rtos/stack_hwm.c) right before each call to stack_hwm_recorded. This prints the
# `g_stack_hwm_count` fresh entries as one JSON line prefixed with "REF-HWM ".
import json

import gdb


class RefHwm(gdb.Command):
    """Print g_stack_hwm's fresh entries as JSON (one line, prefixed REF-HWM)."""

    def __init__(self):
        super().__init__("ref-hwm", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        table = gdb.parse_and_eval("g_stack_hwm")
        count = int(gdb.parse_and_eval("g_stack_hwm_count"))
        rows = []
        for i in range(count):
            e = table[i]
            rows.append({
                "tcb": int(e["task"]),
                "name": e["name"].string(length=e["name"].type.sizeof).split("\0")[0],
                "hwm_words": int(e["hwm_words"]),
            })
        print("REF-HWM " + json.dumps({"rounds": int(gdb.parse_and_eval("g_stack_hwm_rounds")),
                                       "tasks": rows}))


RefHwm()
