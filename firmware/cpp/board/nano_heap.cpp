// nano_heap.cpp - nano_heap.h.
#include "board/nano_heap.h"

#include <cstdlib>

#include "sysmem.h"

extern "C" {
// newlib-nano's free list (address-ordered): {long size; chunk *next}, the
// size including the chunk header.
struct NanoChunk {
    long size;
    NanoChunk* next;
};
extern NanoChunk* __malloc_free_list;
}

namespace board {

void ClaimHeap()
{
    // volatile: GCC would drop a malloc/free pair whose block is never used.
    void* volatile whole = std::malloc(sysmem_headroom() - 16u);
    std::free(whole);
}

uint32_t HeapFreeBytes()
{
    uint32_t sum = 0;
    for (const NanoChunk* c = __malloc_free_list; c != nullptr; c = c->next) {
        sum += static_cast<uint32_t>(c->size);
    }
    return sum + sysmem_headroom();
}

}  // namespace board
