/* freertos_app.c - what a FreeRTOS application supplies to heap_4/heap_5:
 * the heap protector's canary hook and, for heap_5, the region table.
 *
 * heap5: three regions carved from one SRAM block with gaps between them, so
 * they are really non-contiguous, the first one deliberately starting 4 bytes
 * past an 8-byte boundary (heap_5 aligns it up and loses those 4 bytes). The
 * sizes add up to configTOTAL_HEAP_SIZE, like the other allocators' 96 KiB;
 * the last region must hold the load-peak scenario's file + inflate buffers.
 * A region's end marker leaves the free list once a block ending at it is
 * inserted (a split remainder or a freed block); this workload splits every
 * region before the first model_release, so from then on no marker is
 * linked (firmware/README.md, "heap5"). */
#include "heap4.h"

#if configENABLE_HEAP_PROTECTOR
/* FreeRTOS asks the application for a random value; a fixed one keeps the
 * measured figures reproducible. A walker must read xHeapCanary, never
 * assume this value. */
#ifndef HEAP_CANARY_VALUE
#define HEAP_CANARY_VALUE 0x5ec3a9d1u
#endif
void vApplicationGetRandomHeapCanary(portPOINTER_SIZE_TYPE *pxHeapCanary)
{
    *pxHeapCanary = (portPOINTER_SIZE_TYPE)HEAP_CANARY_VALUE;
}
#endif

#ifdef HEAP5_REGIONS
#define HEAP5_REGION0_SIZE 12288u
#define HEAP5_REGION1_SIZE 12288u
#define HEAP5_REGION2_SIZE (configTOTAL_HEAP_SIZE - HEAP5_REGION0_SIZE - HEAP5_REGION1_SIZE)
#define HEAP5_REGION0_OFF  4u     /* not 8-aligned on purpose */
/* Unused gaps between the regions; regions 1 and 2 start 8-aligned. */
#define HEAP5_REGION1_OFF  (HEAP5_REGION0_OFF + HEAP5_REGION0_SIZE + 60u)
#define HEAP5_REGION2_OFF  (HEAP5_REGION1_OFF + HEAP5_REGION1_SIZE + 64u)

_Static_assert(HEAP5_REGION1_OFF % 8u == 0u && HEAP5_REGION2_OFF % 8u == 0u, "region offsets");
static uint8_t ucHeap5Sram[HEAP5_REGION2_OFF + HEAP5_REGION2_SIZE] __attribute__((aligned(8)));

/* Global (not a local of main) so that a debugger finds the regions. */
const HeapRegion_t xHeapRegions[] = {
    {ucHeap5Sram + HEAP5_REGION0_OFF, HEAP5_REGION0_SIZE},
    {ucHeap5Sram + HEAP5_REGION1_OFF, HEAP5_REGION1_SIZE},
    {ucHeap5Sram + HEAP5_REGION2_OFF, HEAP5_REGION2_SIZE},
    {NULL, 0},
};
#endif
