# An independent reading of the firmware's heap, done by gdb itself (gdb-multiarch with Python).
#
# memlife's end-to-end tests compare `memlife heap --json` with what this prints. It shares no
# code with memlife: gdb resolves the symbols and types from DWARF and reads memory through its own
# remote protocol client, one block at a time, following the allocator's rules as written in
# ALLOCATORS.md (heap_4 section 2.3, newlib-nano section 4.3).
#
# Usage inside gdb: `source heap_reference.py`, then `ref-heap`; prints one JSON line
# prefixed with "REF-HEAP ".
import json

import gdb

MSB = 1 << 31


def val(expr):
    return int(gdb.parse_and_eval(expr))


def word(addr):
    return val("*(unsigned int *)%d" % addr)


def have(name):
    try:
        gdb.parse_and_eval("&" + name)
        return True
    except gdb.error:
        return False


def heap4():
    start = (val("(unsigned int)&ucHeap") + 7) & ~7
    end = val("(unsigned int)pxEnd")
    blocks = []
    b = start
    while b < end and len(blocks) < 100000:
        raw = val("((BlockLink_t *)%d)->xBlockSize" % b)
        size = raw & ~MSB
        blocks.append({"addr": b, "size": size, "free": raw & MSB == 0})
        if size == 0:
            break
        b += size
    free_list = []
    p = val("(unsigned int)xStart.pxNextFreeBlock")
    while p != end and len(free_list) < 100000:
        free_list.append(p)
        p = val("(unsigned int)((BlockLink_t *)%d)->pxNextFreeBlock" % p)
    return {
        "allocator": "freertos-heap4",
        "total_free": sum(b["size"] for b in blocks if b["free"]),
        "counter_free": val("xFreeBytesRemaining"),
        "free_blocks": len(free_list),
        "used_blocks": sum(1 for b in blocks if not b["free"]),
        "free_list": free_list,
        "blocks": blocks,
    }


def nano():
    start = (val("(unsigned int)__malloc_sbrk_start") + 3) & ~3
    brk = val("(unsigned int)__sbrk_heap_end")
    limit = val("(unsigned int)&_heap_limit")
    free_list = []
    p = val("(unsigned int)__malloc_free_list")
    while p != 0 and len(free_list) < 100000:
        free_list.append(p)
        p = word(p + 4)
    blocks = []
    b = start
    while b < brk and len(blocks) < 100000:
        size = val("*(int *)%d" % b)
        blocks.append({"addr": b, "size": size, "free": b in free_list})
        if size <= 0:
            break
        b += size
    return {
        "allocator": "newlib-nano",
        "total_free": sum(b["size"] for b in blocks if b["free"]) + (limit - brk),
        "free_blocks": len(free_list),
        "used_blocks": sum(1 for b in blocks if not b["free"]),
        "free_list": free_list,
        "blocks": blocks,
    }


class RefHeap(gdb.Command):
    """Print the heap as JSON (one line, prefixed REF-HEAP)."""

    def __init__(self):
        super().__init__("ref-heap", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        state = heap4() if have("ucHeap") else nano()
        state["pc"] = val("$pc")
        print("REF-HEAP " + json.dumps(state))


RefHeap()
