/* heap4.h - our own allocator with FreeRTOS heap_4's data layout, and its
 * heap_5-style variant (several regions, HEAP5_REGIONS).
 *
 * The debugger (memlife) walks this heap exactly as it would walk a FreeRTOS
 * heap_4 / heap_5 heap, so the names and the layout of the statics in heap4.c
 * matter more than the code: see firmware/README.md and
 * docs/allocators/freertos-heap4-heap5.md.
 *
 * Build options (all 0 unless set on the command line):
 *  configENABLE_HEAP_PROTECTOR=1   free-list links stored XORed with xHeapCanary,
 *                                  which comes from the application hook
 *                                  vApplicationGetRandomHeapCanary();
 *  configHEAP_PROTECT_ALLOCATED=1  with the protector, an allocated block's
 *                                  link holds NULL ^ canary (FreeRTOS >= V11.2.0);
 *                                  0: a raw NULL (V11.0.0 - V11.1.0);
 *  HEAP5_REGIONS                   heap_5: no ucHeap, the application hands its
 *                                  regions to vPortDefineHeapRegions(). */
#ifndef HEAP4_H
#define HEAP4_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* also linked into the TFLM firmware (firmware/tflm) */
#endif

#ifndef configTOTAL_HEAP_SIZE
#define configTOTAL_HEAP_SIZE ((size_t)98304) /* 96 KiB */
#endif
#ifndef configENABLE_HEAP_PROTECTOR
#define configENABLE_HEAP_PROTECTOR 0
#endif
#ifndef configHEAP_PROTECT_ALLOCATED
#define configHEAP_PROTECT_ALLOCATED 1
#endif

typedef unsigned long UBaseType_t;
/* As in the FreeRTOS ports: an integer as wide as a pointer (a macro, so the
 * canary's DWARF type is the plain integer type). */
#define portPOINTER_SIZE_TYPE uintptr_t

/* Non-zero while pvPortMalloc/vPortFree run (FreeRTOS keeps it in tasks.c and
 * bumps it in vTaskSuspendAll); a halted debugger reads it to tell "heap busy"
 * from "heap corrupt". With HEAP4_WITH_FREERTOS the kernel's own (static) one
 * is used, through vTaskSuspendAll/xTaskResumeAll. */
#ifndef HEAP4_WITH_FREERTOS
extern volatile UBaseType_t uxSchedulerSuspended;
#endif

/* vPortGetHeapStats' output, field names and order as FreeRTOS >= V10.3.0. */
typedef struct xHeapStats {
    size_t xAvailableHeapSpaceInBytes;     /* xFreeBytesRemaining */
    size_t xSizeOfLargestFreeBlockInBytes; /* whole block, header included */
    size_t xSizeOfSmallestFreeBlockInBytes; /* SIZE_MAX when nothing is free */
    size_t xNumberOfFreeBlocks;            /* free-list entries (heap_5: markers too) */
    size_t xMinimumEverFreeBytesRemaining;
    size_t xNumberOfSuccessfulAllocations;
    size_t xNumberOfSuccessfulFrees;
} HeapStats_t;

void *pvPortMalloc(size_t xWantedSize);
void vPortFree(void *pv);
size_t xPortGetFreeHeapSize(void);
size_t xPortGetMinimumEverFreeHeapSize(void);
void vPortGetHeapStats(HeapStats_t *pxHeapStats);

#if configENABLE_HEAP_PROTECTOR
/* Supplied by the application (FreeRTOS calls it once, at heap init). */
void vApplicationGetRandomHeapCanary(portPOINTER_SIZE_TYPE *pxHeapCanary);
#endif

#ifdef HEAP5_REGIONS
/* One region for vPortDefineHeapRegions; the array ends with {NULL, 0} and
 * must be sorted by ascending address. */
typedef struct HeapRegion {
    uint8_t *pucStartAddress;
    size_t xSizeInBytes;
} HeapRegion_t;
/* Builds the heap over the regions; call once, before the first malloc
 * (pvPortMalloc returns NULL until then). */
void vPortDefineHeapRegions(const HeapRegion_t *const pxHeapRegions);
#endif

#ifdef HEAP4_HOST_TEST
/* Test-only view of the file-static state (compiled for the host test only). */
typedef struct heap4_view {
    const void *xStart;        /* &xStart */
    const void *pxEnd;         /* pxEnd */
    const uint8_t *ucHeap;     /* heap_4: &ucHeap[0]; heap_5: NULL */
    size_t heap_size;          /* heap_4: configTOTAL_HEAP_SIZE */
    size_t xFreeBytesRemaining;
    size_t xMinimumEverFreeBytesRemaining;
    size_t xNumberOfSuccessfulAllocations;
    size_t xNumberOfSuccessfulFrees;
    size_t xHeapStructSize;
    uintptr_t xHeapCanary;     /* 0 without the protector */
} heap4_view_t;
void heap4_test_view(heap4_view_t *v);
#endif

#ifdef __cplusplus
}
#endif

#endif
