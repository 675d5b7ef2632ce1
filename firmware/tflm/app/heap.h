// heap.h - the TFLM firmware's heap: src/heap4.c (FreeRTOS heap_4's layout) behind malloc,
// free and every operator new and delete (heap.cpp), so a heap_4 walker sees everything the
// application allocates, TFLM's arenas included.
#ifndef TFLM_APP_HEAP_H
#define TFLM_APP_HEAP_H

#include <cstdint>

namespace app {

// Builds the heap (heap_4 does it on its first allocation) so that the free bytes read
// before the first cycle are the baseline every release must return to.
void StartHeap();

// heap_4's xFreeBytesRemaining: free blocks, headers included.
uint32_t HeapFreeBytes();

}  // namespace app

#endif
