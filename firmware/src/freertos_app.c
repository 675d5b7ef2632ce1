/* freertos_app.c - what a FreeRTOS application supplies to heap_4/heap_5:
 * the heap protector's canary hook and, for heap_5, the region table.
 *
 * heap5: three regions carved from one SRAM block with gaps between them, so
 * they are really non-contiguous, the first one deliberately starting 4 bytes
 * past an 8-byte boundary (heap_5 aligns it up and loses those 4 bytes). The
 * sizes add up to configTOTAL_HEAP_SIZE, like the other allocators' 96 KiB;
 * the last region must hold the load-peak scenario's file + inflate buffers. */
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
#define HEAP5_GAP          64u    /* unused bytes between regions */
#define HEAP5_REGION1_OFF  (HEAP5_REGION0_OFF + HEAP5_REGION0_SIZE + HEAP5_GAP)
#define HEAP5_REGION2_OFF  (HEAP5_REGION1_OFF + HEAP5_REGION1_SIZE + HEAP5_GAP)

static uint8_t ucHeap5Sram[HEAP5_REGION2_OFF + HEAP5_REGION2_SIZE] __attribute__((aligned(8)));

/* Global (not a local of main) so that a debugger finds the regions. */
const HeapRegion_t xHeapRegions[] = {
    {ucHeap5Sram + HEAP5_REGION0_OFF, HEAP5_REGION0_SIZE},
    {ucHeap5Sram + HEAP5_REGION1_OFF, HEAP5_REGION1_SIZE},
    {ucHeap5Sram + HEAP5_REGION2_OFF, HEAP5_REGION2_SIZE},
    {NULL, 0},
};
#endif
