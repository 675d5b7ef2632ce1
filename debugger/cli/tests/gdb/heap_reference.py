# An independent reading of the firmware's heap, done by gdb itself (gdb-multiarch with Python).
#
# memlife's end-to-end tests compare `memlife heap --json` with what this prints. It shares no
# code with memlife: gdb resolves the symbols and types from DWARF and reads memory through its own
# remote protocol client, one block at a time, following the allocator's rules as written in
# docs/allocators/ (freertos-heap4-heap5.md, newlib-nano.md, esp-idf-tlsf.md).
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


def freertos():
    """heap_4 (ucHeap) or heap_5 (the application's xHeapRegions table), with or without the heap
    protector: every stored link is decoded with xHeapCanary here, pxEnd is read as stored."""
    canary = val("(unsigned int)xHeapCanary") if have("xHeapCanary") else 0
    end = val("(unsigned int)pxEnd")
    if have("ucHeap"):
        regions = [((val("(unsigned int)&ucHeap") + 7) & ~7, end)]
        name = "freertos-heap4"
    else:
        regions = []
        i = 0
        while True:
            start = val("(unsigned int)xHeapRegions[%d].pucStartAddress" % i)
            size = val("xHeapRegions[%d].xSizeInBytes" % i)
            if start == 0 or size == 0:
                break
            aligned = (start + 7) & ~7
            size -= aligned - start
            regions.append((aligned, (aligned + size - 8) & ~7))
            i += 1
        name = "freertos-heap5"
    blocks = []
    for start, marker in regions:
        b = start
        while b < marker and len(blocks) < 100000:
            raw = val("((BlockLink_t *)%d)->xBlockSize" % b)
            size = raw & ~MSB
            blocks.append({"addr": b, "size": size, "free": raw & MSB == 0})
            if size == 0:
                break
            b += size
    markers = [m for _, m in regions]
    free_list = []
    p = val("(unsigned int)xStart.pxNextFreeBlock") ^ canary
    steps = 0
    while p != end and steps < 100000:
        steps += 1
        # heap_5's region markers (size 0) still linked between regions are links, not blocks.
        if not (p in markers and val("((BlockLink_t *)%d)->xBlockSize" % p) == 0):
            free_list.append(p)
        p = val("(unsigned int)((BlockLink_t *)%d)->pxNextFreeBlock" % p) ^ canary
    return {
        "allocator": name,
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


def has_member(type_name, member):
    try:
        return any(f.name == member for f in gdb.lookup_type(type_name).fields())
    except gdb.error:
        return False


def tlsf():
    """ESP-IDF: every registered heap's multi_heap_info.free_bytes, physical walk and free lists.

    Blocks are reported as memlife counts them (docs/heap-json.md): at the block_header_t
    address, with the TLSF size field + 4 (the size word), so that the sum of the used ones plus
    the sum of free_bytes is the capacity."""
    dynamic = has_member("control_t", "size")
    blocks, free_list, heaps = [], [], []
    h = val("(unsigned int)registered_heaps.slh_first")
    while h != 0 and len(heaps) < 64:
        node = "((struct heap_t_ *)%d)" % h
        info = val("(unsigned int)%s->heap" % node)
        if info != 0:
            mhi = "((struct multi_heap_info *)%d)" % info
            control = val("(unsigned int)%s->heap_data" % mhi)
            ctl = "((control_t *)%d)" % control
            if dynamic:
                tlsf_size = val("%s->size" % ctl)
                fl_count = val("%s->fl_index_count" % ctl)
                sl_count = val("%s->sl_index_count" % ctl)

                def head(fl, sl, ctl=ctl, sl_count=sl_count):
                    return val("(unsigned int)%s->blocks[%d]" % (ctl, fl * sl_count + sl))
            else:
                tlsf_size = val("sizeof(control_t)")
                fl_count = val("sizeof(%s->sl_bitmap) / sizeof(%s->sl_bitmap[0])" % (ctl, ctl))
                sl_count = val("sizeof(%s->blocks[0]) / sizeof(%s->blocks[0][0])" % (ctl, ctl))

                def head(fl, sl, ctl=ctl):
                    return val("(unsigned int)%s->blocks[%d][%d]" % (ctl, fl, sl))
            b = control + tlsf_size - 4
            largest = 0
            while len(blocks) < 100000:
                raw = val("((block_header_t *)%d)->size" % b)
                size = raw & ~3
                if size == 0:
                    break
                blocks.append({"addr": b, "size": size + 4, "free": raw & 1 == 1})
                if raw & 1:
                    largest = max(largest, size)
                b += 4 + size
            for fl in range(fl_count):
                for sl in range(sl_count):
                    p = head(fl, sl)
                    while p != control and len(free_list) < 100000:
                        free_list.append(p)
                        p = val("(unsigned int)((block_header_t *)%d)->next_free" % p)
            # ESP-IDF's largest_free_block: TLSF is good-fit, so only requests one second-level
            # class below the largest free block are sure to succeed (docs/allocators/esp-idf-tlsf.md).
            fit = 0
            if largest:
                interval = (1 << (largest.bit_length() - 1)) // sl_count
                fit = largest & ~(interval - 1) if interval else 0
            heaps.append({
                "largest_allocatable": fit,
                "start": val("(unsigned int)%s->start" % node),
                "free_bytes": val("%s->free_bytes" % mhi),
                "minimum_free_bytes": val("%s->minimum_free_bytes" % mhi),
            })
        h = val("(unsigned int)%s->next.sle_next" % node)
    return {
        "allocator": "esp-idf-tlsf",
        "total_free": sum(x["free_bytes"] for x in heaps),
        "counter_free": sum(x["free_bytes"] for x in heaps),
        "min_ever_free": sum(x["minimum_free_bytes"] for x in heaps),
        "heaps": heaps,
        "largest_allocatable": max([x["largest_allocatable"] for x in heaps] or [0]),
        "free_blocks": len(free_list),
        "used_blocks": sum(1 for b in blocks if not b["free"]),
        "free_list": free_list,
        "blocks": sorted(blocks, key=lambda b: b["addr"]),
    }


class RefHeap(gdb.Command):
    """Print the heap as JSON (one line, prefixed REF-HEAP)."""

    def __init__(self):
        super().__init__("ref-heap", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        if have("registered_heaps"):
            state = tlsf()
        elif have("xFreeBytesRemaining"):
            state = freertos()
        else:
            state = nano()
        state["pc"] = val("$pc")
        print("REF-HEAP " + json.dumps(state))


RefHeap()
