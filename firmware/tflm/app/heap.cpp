// heap.cpp - heap.h: malloc/free and operator new/delete on heap4's pvPortMalloc/vPortFree.
//
// Nothing of newlib's malloc is linked: TFLM (TF_LITE_STATIC_MEMORY) never calls malloc
// itself, and newlib's reentrant entry points are defined here too, so that a C library
// function that allocates lands on the same heap instead of pulling nano's malloc in.
// A failed operator new reports through board::OutOfMemory (this build has no exceptions).
#include "heap.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>

#include "board/board.h"
#include "heap4.h"

extern "C" {

void* malloc(size_t bytes)
{
    return pvPortMalloc(bytes);
}

void free(void* block)
{
    vPortFree(block);
}

void* calloc(size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) return nullptr;
    void* block = pvPortMalloc(count * size);
    if (block != nullptr) std::memset(block, 0, count * size);
    return block;
}

void* _malloc_r(struct _reent*, size_t bytes)
{
    return malloc(bytes);
}

void _free_r(struct _reent*, void* block)
{
    free(block);
}

void* _calloc_r(struct _reent*, size_t count, size_t size)
{
    return calloc(count, size);
}

}  // extern "C"

void* operator new(size_t bytes)
{
    void* block = pvPortMalloc(bytes != 0 ? bytes : 1);
    if (block == nullptr) board::OutOfMemory();
    return block;
}

void* operator new[](size_t bytes)
{
    return operator new(bytes);
}

void operator delete(void* block) noexcept
{
    vPortFree(block);
}

void operator delete[](void* block) noexcept
{
    vPortFree(block);
}

void operator delete(void* block, size_t) noexcept
{
    vPortFree(block);
}

void operator delete[](void* block, size_t) noexcept
{
    vPortFree(block);
}

namespace app {

void StartHeap()
{
    vPortFree(pvPortMalloc(1));
}

uint32_t HeapFreeBytes()
{
    return static_cast<uint32_t>(xPortGetFreeHeapSize());
}

}  // namespace app
