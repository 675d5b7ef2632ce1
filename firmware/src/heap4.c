/* heap4.c - first-fit allocator with FreeRTOS heap_4's data layout.
 *
 * Written from the layout facts only (docs/allocators/freertos-heap4-heap5.md),
 * not from the FreeRTOS sources. What a heap walker relies on:
 *  - blocks are BlockLink_t headers followed by the payload; xBlockSize is the
 *    whole block size including the header, multiple of portBYTE_ALIGNMENT;
 *  - the MSB of xBlockSize marks an allocated block; an allocated block has
 *    pxNextFreeBlock == NULL;
 *  - the free list starts at the static struct xStart, is address-ordered and
 *    ends at pxEnd, a zero-size header inside ucHeap at its (aligned) top;
 *  - xFreeBytesRemaining is the sum of free block sizes, headers included.
 * It is portable (size_t / uintptr_t) so that the host test can run it on a
 * 64-bit machine, where headers are 16 bytes. */
#include "heap4.h"

#define portBYTE_ALIGNMENT      8
#define portBYTE_ALIGNMENT_MASK ((size_t)(portBYTE_ALIGNMENT - 1))

/* V10.5+ style: the flag is a macro, not a RAM variable. */
#define heapBLOCK_ALLOCATED_BITMASK   (((size_t)1) << ((sizeof(size_t) * 8u) - 1u))
#define heapBLOCK_SIZE_IS_VALID(x)    (((x) & heapBLOCK_ALLOCATED_BITMASK) == 0)
#define heapBLOCK_IS_ALLOCATED(b)     (((b)->xBlockSize & heapBLOCK_ALLOCATED_BITMASK) != 0)
#define heapALLOCATE_BLOCK(b)         ((b)->xBlockSize |= heapBLOCK_ALLOCATED_BITMASK)
#define heapFREE_BLOCK(b)             ((b)->xBlockSize &= ~heapBLOCK_ALLOCATED_BITMASK)

typedef struct A_BLOCK_LINK {
    struct A_BLOCK_LINK *pxNextFreeBlock; /* next free block, address order */
    size_t xBlockSize;                    /* whole block incl. header; MSB = allocated */
} BlockLink_t;

/* Header size rounded up to the alignment (8 on Cortex-M, 16 on 64-bit hosts). */
static const size_t xHeapStructSize =
    (sizeof(BlockLink_t) + portBYTE_ALIGNMENT_MASK) & ~portBYTE_ALIGNMENT_MASK;
/* A remainder is split off only if it can hold more than two headers. */
#define heapMINIMUM_BLOCK_SIZE ((size_t)(xHeapStructSize << 1))

static uint8_t ucHeap[configTOTAL_HEAP_SIZE];
static BlockLink_t xStart;
static BlockLink_t *pxEnd = NULL; /* NULL until the lazy init in pvPortMalloc */

static size_t xFreeBytesRemaining = 0U;
static size_t xMinimumEverFreeBytesRemaining = 0U;
static size_t xNumberOfSuccessfulAllocations = 0U;
static size_t xNumberOfSuccessfulFrees = 0U;

volatile UBaseType_t uxSchedulerSuspended = 0U;

/* Stand-ins for vTaskSuspendAll/xTaskResumeAll: no scheduler here, but the
 * counter tells a debugger that halted us mid-operation that lists may be
 * half-updated. */
static inline void prvSuspend(void) { uxSchedulerSuspended++; }
static inline void prvResume(void) { uxSchedulerSuspended--; }

static void prvHeapInit(void)
{
    uintptr_t uxStart = (uintptr_t)ucHeap;
    uintptr_t uxTop = (uintptr_t)ucHeap + configTOTAL_HEAP_SIZE;
    BlockLink_t *pxFirst;

    uxStart = (uxStart + portBYTE_ALIGNMENT_MASK) & ~(uintptr_t)portBYTE_ALIGNMENT_MASK;

    /* End marker lives inside the arena, aligned down, at its top. */
    uxTop -= xHeapStructSize;
    uxTop &= ~(uintptr_t)portBYTE_ALIGNMENT_MASK;
    pxEnd = (BlockLink_t *)uxTop;
    pxEnd->xBlockSize = 0U;
    pxEnd->pxNextFreeBlock = NULL;

    /* One free block spans everything from the aligned start to pxEnd. */
    pxFirst = (BlockLink_t *)uxStart;
    pxFirst->xBlockSize = (size_t)(uxTop - uxStart);
    pxFirst->pxNextFreeBlock = pxEnd;

    xStart.pxNextFreeBlock = pxFirst;
    xStart.xBlockSize = 0U;

    xFreeBytesRemaining = pxFirst->xBlockSize;
    xMinimumEverFreeBytesRemaining = pxFirst->xBlockSize;
}

/* Insert a free block in address order and merge it with its physical
 * neighbours, so the list never holds two adjacent free blocks. */
static void prvInsertBlockIntoFreeList(BlockLink_t *pxBlock)
{
    BlockLink_t *pxIter = &xStart;
    uint8_t *puc;

    while (pxIter->pxNextFreeBlock < pxBlock) {
        pxIter = pxIter->pxNextFreeBlock;
    }

    /* Merge with the free block just below? (xStart is not in the arena.) */
    puc = (uint8_t *)pxIter;
    if (pxIter != &xStart && puc + pxIter->xBlockSize == (uint8_t *)pxBlock) {
        pxIter->xBlockSize += pxBlock->xBlockSize;
        pxBlock = pxIter;
    }

    /* Merge with the free block just above (never with pxEnd). */
    puc = (uint8_t *)pxBlock;
    if (puc + pxBlock->xBlockSize == (uint8_t *)pxIter->pxNextFreeBlock &&
        pxIter->pxNextFreeBlock != pxEnd) {
        pxBlock->xBlockSize += pxIter->pxNextFreeBlock->xBlockSize;
        pxBlock->pxNextFreeBlock = pxIter->pxNextFreeBlock->pxNextFreeBlock;
    } else {
        pxBlock->pxNextFreeBlock = pxIter->pxNextFreeBlock;
    }

    if (pxIter != pxBlock) {
        pxIter->pxNextFreeBlock = pxBlock;
    }
}

__attribute__((noinline)) void *pvPortMalloc(size_t xWantedSize)
{
    BlockLink_t *pxPrev, *pxBlock, *pxNew;
    void *pvReturn = NULL;
    size_t xAdd;

    prvSuspend();
    if (pxEnd == NULL) {
        prvHeapInit();
    }

    /* Header plus payload, rounded up to the alignment; reject 0, overflow
     * and anything with the flag bit set. */
    if (xWantedSize > 0U && xWantedSize <= SIZE_MAX - xHeapStructSize - portBYTE_ALIGNMENT) {
        xWantedSize += xHeapStructSize;
        xAdd = portBYTE_ALIGNMENT - (xWantedSize & portBYTE_ALIGNMENT_MASK);
        if ((xWantedSize & portBYTE_ALIGNMENT_MASK) != 0U) {
            xWantedSize += xAdd;
        }
    } else {
        xWantedSize = 0U;
    }

    if (xWantedSize > 0U && heapBLOCK_SIZE_IS_VALID(xWantedSize) &&
        xWantedSize <= xFreeBytesRemaining) {
        /* First fit in address order. */
        pxPrev = &xStart;
        pxBlock = xStart.pxNextFreeBlock;
        while (pxBlock->xBlockSize < xWantedSize && pxBlock->pxNextFreeBlock != NULL) {
            pxPrev = pxBlock;
            pxBlock = pxBlock->pxNextFreeBlock;
        }

        if (pxBlock != pxEnd) {
            pvReturn = (void *)((uint8_t *)pxBlock + xHeapStructSize);
            pxPrev->pxNextFreeBlock = pxBlock->pxNextFreeBlock;

            /* Split only when the tail can hold more than two headers; else
             * the caller gets up to 2*xHeapStructSize of slack. */
            if (pxBlock->xBlockSize - xWantedSize > heapMINIMUM_BLOCK_SIZE) {
                pxNew = (BlockLink_t *)((uint8_t *)pxBlock + xWantedSize);
                pxNew->xBlockSize = pxBlock->xBlockSize - xWantedSize;
                pxBlock->xBlockSize = xWantedSize;
                prvInsertBlockIntoFreeList(pxNew);
            }

            xFreeBytesRemaining -= pxBlock->xBlockSize;
            if (xFreeBytesRemaining < xMinimumEverFreeBytesRemaining) {
                xMinimumEverFreeBytesRemaining = xFreeBytesRemaining;
            }
            heapALLOCATE_BLOCK(pxBlock);
            pxBlock->pxNextFreeBlock = NULL;
            xNumberOfSuccessfulAllocations++;
        }
    }
    prvResume();
    return pvReturn;
}

__attribute__((noinline)) void vPortFree(void *pv)
{
    BlockLink_t *pxLink;

    if (pv == NULL) {
        return;
    }
    pxLink = (BlockLink_t *)((uint8_t *)pv - xHeapStructSize);

    /* Only a block that looks allocated and unlinked is accepted; anything
     * else is a double free or an overwritten header, which we refuse to
     * spread into the free list. */
    if (!heapBLOCK_IS_ALLOCATED(pxLink) || pxLink->pxNextFreeBlock != NULL) {
        return;
    }

    prvSuspend();
    heapFREE_BLOCK(pxLink);
    xFreeBytesRemaining += pxLink->xBlockSize;
    prvInsertBlockIntoFreeList(pxLink);
    xNumberOfSuccessfulFrees++;
    prvResume();
}

size_t xPortGetFreeHeapSize(void)
{
    return xFreeBytesRemaining;
}

size_t xPortGetMinimumEverFreeHeapSize(void)
{
    return xMinimumEverFreeBytesRemaining;
}

#ifdef HEAP4_HOST_TEST
void heap4_test_view(heap4_view_t *v)
{
    v->xStart = &xStart;
    v->pxEnd = pxEnd;
    v->ucHeap = ucHeap;
    v->heap_size = configTOTAL_HEAP_SIZE;
    v->xFreeBytesRemaining = xFreeBytesRemaining;
    v->xMinimumEverFreeBytesRemaining = xMinimumEverFreeBytesRemaining;
    v->xNumberOfSuccessfulAllocations = xNumberOfSuccessfulAllocations;
    v->xNumberOfSuccessfulFrees = xNumberOfSuccessfulFrees;
    v->xHeapStructSize = xHeapStructSize;
}
#endif
