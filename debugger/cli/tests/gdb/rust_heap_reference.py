# An independent reading of the Rust firmware's heap (firmware/rust), done by gdb itself
# (gdb-multiarch with Python, its own Rust expression support and DWARF reader).
#
# memlife's end-to-end tests compare `memlife heap --json` with what this prints. It shares no
# code with memlife: gdb finds the global allocator by its Rust path (firmware::heap::HEAP),
# walks to the allocator through the fields as embedded-alloc 0.7 declares them, and follows the
# allocators' rules as written in docs/allocators/embedded-alloc.md: linked_list_allocator's
# holes (used memory = the spans between them), rlsf's blocks up to the sentinel and its free
# lists.
#
# Usage inside gdb: `source rust_heap_reference.py`, then `ref-rust-heap`; prints one JSON line
# prefixed with "REF-HEAP ". `ref-rust-fv` prints the firmware's own figures ("REF-FV ").
import json

import gdb


def word(addr):
    data = gdb.selected_inferior().read_memory(addr, 4).tobytes()
    return int.from_bytes(data, "little")


def addr_of(v):
    return int(v.address)


def inner():
    """The value inside Mutex<RefCell<T>>: (RefCell, T)."""
    cell = gdb.parse_and_eval("firmware::heap::HEAP")["heap"]["inner"]["value"]
    return cell, cell["value"]["value"]


def llff():
    cell, tup = inner()
    heap = tup["__0"]
    holes = heap["holes"]
    used = int(heap["used"])
    bottom = int(holes["bottom"])
    top = int(holes["top"])
    # holes.first is a dummy {size 0, next}; `next` is an Option<NonNull<Hole>> (0 = None).
    p = word(addr_of(holes["first"]) + 4)
    blocks, free_list = [], []
    end = bottom
    while p != 0:
        size = word(p)
        if p > end:
            blocks.append({"addr": end, "size": p - end, "free": False})
        blocks.append({"addr": p, "size": size, "free": True})
        free_list.append(p)
        end = p + size
        p = word(p + 4)
    if end < top:
        blocks.append({"addr": end, "size": top - end, "free": False})
    free = sum(b["size"] for b in blocks if b["free"])
    return {
        "allocator": "embedded-alloc-llff",
        "heap_start": bottom,
        "heap_size": top - bottom,
        "total_free": free,
        "free_blocks": len(free_list),
        "used_blocks": sum(1 for b in blocks if not b["free"]),
        "free_list": free_list,
        "blocks": blocks,
        # LlffHeap::used() / free() as the crate computes them.
        "used": used,
        "free": (top - bottom) - used,
    }


def tlsf():
    cell, inner_v = inner()
    raw = word(addr_of(inner_v["raw_block"]))
    raw_size = int(inner_v["raw_block_size"])
    g = 16
    start = (raw + g - 1) & ~(g - 1)
    blocks = []
    b = start
    while True:
        size_word = word(b)
        if size_word & 2:  # the sentinel ends the pool
            break
        size = size_word & ~(g - 1)
        blocks.append({"addr": b, "size": size, "free": not (size_word & 1)})
        b += size
    t = inner_v["tlsf"]
    first_free = addr_of(t["first_free"])
    fl_count = t["first_free"].type.range()[1] + 1
    sl_count = t["first_free"][0].type.range()[1] + 1
    free_list = []
    for i in range(fl_count * sl_count):
        p = word(first_free + 4 * i)
        while p != 0:
            free_list.append(p)
            p = word(p + 8)  # FreeBlockHdr.next_free (repr(C), after the 8-byte BlockHdr)
    free = sum(b["size"] for b in blocks if b["free"])
    # TlsfHeap::free(): each free block's largest payload (its size less the 8-byte header).
    api_free = sum(b["size"] - 8 for b in blocks if b["free"])
    return {
        "allocator": "embedded-alloc-tlsf",
        "heap_start": start,
        "heap_size": sum(b["size"] for b in blocks),
        "total_free": free,
        "free_blocks": len(free_list),
        "used_blocks": sum(1 for b in blocks if not b["free"]),
        "free_list": free_list,
        "blocks": blocks,
        "used": raw_size - api_free,
        "free": api_free,
    }


class RefRustHeap(gdb.Command):
    """Print the Rust firmware's heap as JSON (one line, prefixed REF-HEAP)."""

    def __init__(self):
        super().__init__("ref-rust-heap", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        gdb.execute("set language rust")
        heap_type = str(gdb.parse_and_eval("firmware::heap::HEAP").type)
        state = llff() if "llff" in heap_type else tlsf()
        state["pc"] = int(gdb.parse_and_eval("$pc"))
        print("REF-HEAP " + json.dumps(state))


RefRustHeap()


class RefRustFv(gdb.Command):
    """Print the firmware's g_firmware_view (HEAP.used()/free() as the firmware itself called
    them right before model_release) as JSON (one line, prefixed REF-FV)."""

    def __init__(self):
        super().__init__("ref-rust-fv", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        gdb.execute("set language rust")
        v = gdb.parse_and_eval("firmware::heap::g_firmware_view")
        print("REF-FV " + json.dumps({f: int(v[f]) for f in ("captures", "used", "free")}))


RefRustFv()
