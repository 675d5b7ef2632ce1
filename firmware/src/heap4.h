/* heap4.h - our own allocator with FreeRTOS heap_4's data layout.
 *
 * The debugger (memlife) walks this heap exactly as it would walk a FreeRTOS
 * heap_4 heap, so the names and the layout of the statics in heap4.c matter
 * more than the code: see firmware/README.md and
 * docs/allocators/freertos-heap4-heap5.md. */
#ifndef HEAP4_H
#define HEAP4_H

#include <stddef.h>
#include <stdint.h>

#ifndef configTOTAL_HEAP_SIZE
#define configTOTAL_HEAP_SIZE ((size_t)98304) /* 96 KiB */
#endif

typedef unsigned long UBaseType_t;

/* Non-zero while pvPortMalloc/vPortFree run (FreeRTOS keeps it in tasks.c and
 * bumps it in vTaskSuspendAll); a halted debugger reads it to tell "heap busy"
 * from "heap corrupt". */
extern volatile UBaseType_t uxSchedulerSuspended;

void *pvPortMalloc(size_t xWantedSize);
void vPortFree(void *pv);
size_t xPortGetFreeHeapSize(void);
size_t xPortGetMinimumEverFreeHeapSize(void);

#ifdef HEAP4_HOST_TEST
/* Test-only view of the file-static state (compiled for the host test only). */
typedef struct heap4_view {
    const void *xStart;        /* &xStart */
    const void *pxEnd;         /* pxEnd */
    const uint8_t *ucHeap;     /* &ucHeap[0] */
    size_t heap_size;          /* configTOTAL_HEAP_SIZE */
    size_t xFreeBytesRemaining;
    size_t xMinimumEverFreeBytesRemaining;
    size_t xNumberOfSuccessfulAllocations;
    size_t xNumberOfSuccessfulFrees;
    size_t xHeapStructSize;
} heap4_view_t;
void heap4_test_view(heap4_view_t *v);
#endif

#endif
