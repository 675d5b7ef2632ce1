// nano_heap.h - the C++ interpreter firmware's heap: newlib-nano's malloc
// behind libstdc++'s operator new, in the 96 KiB that src/sysmem.c's _sbrk
// hands out.
#ifndef CPP_BOARD_NANO_HEAP_H
#define CPP_BOARD_NANO_HEAP_H

#include <cstdint>

namespace board {

// Claims the whole heap from _sbrk once and frees it, before the first
// allocation: newlib-nano 3.3 never merges a free chunk with memory sbrk
// hands out later, so with a growing break every pinned block would push
// the break up and the first cycle would differ from the others. Afterwards
// nano allocates inside one fixed arena (as in the C firmware's mem_init).
void ClaimHeap();

// Free bytes of the newlib-nano heap: free-list chunks (headers included)
// plus the sbrk headroom up to _heap_limit.
uint32_t HeapFreeBytes();

}  // namespace board

#endif
