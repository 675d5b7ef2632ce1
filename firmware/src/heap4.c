/* heap4.c - first-fit allocator with FreeRTOS heap_4's data layout, and with
 * HEAP5_REGIONS heap_5's (several regions); optional heap protector.
 *
 * Written from the layout facts only (docs/allocators/freertos-heap4-heap5.md),
 * not from the FreeRTOS sources. What a heap walker relies on:
 *  - blocks are BlockLink_t headers followed by the payload; xBlockSize is the
 *    whole block size including the header, multiple of portBYTE_ALIGNMENT;
 *  - the MSB of xBlockSize marks an allocated block; an allocated block has
 *    pxNextFreeBlock == NULL (protector: see below);
 *  - the free list starts at the static struct xStart, is address-ordered and
 *    ends at pxEnd, a zero-size header at the (aligned) top of the arena
 *    (heap_5: of the last region);
 *  - heap_5: every region ends in a zero-size marker; right after
 *    vPortDefineHeapRegions each marker but the last is linked into the free
 *    list (marker -> first block of the next region); a block freed next to a
 *    marker absorbs it (size 0), the marker then leaves the list and keeps a
 *    stale link;
 *  - protector: every stored link (xStart's, free blocks', markers', pxEnd's
 *    own) is pointer ^ xHeapCanary; the variable pxEnd and every xBlockSize are
 *    plain; an allocated block's link is NULL ^ canary
 *    (configHEAP_PROTECT_ALLOCATED=1) or a raw NULL (=0);
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
    struct A_BLOCK_LINK *pxNextFreeBlock; /* next free block, address order (maybe XORed) */
    size_t xBlockSize;                    /* whole block incl. header; MSB = allocated */
} BlockLink_t;

/* Header size rounded up to the alignment (8 on Cortex-M, 16 on 64-bit hosts). */
static const size_t xHeapStructSize =
    (sizeof(BlockLink_t) + portBYTE_ALIGNMENT_MASK) & ~portBYTE_ALIGNMENT_MASK;
/* A remainder is split off only if it can hold more than two headers. */
#define heapMINIMUM_BLOCK_SIZE ((size_t)(xHeapStructSize << 1))

#ifndef HEAP5_REGIONS
static uint8_t ucHeap[configTOTAL_HEAP_SIZE];
#endif
static BlockLink_t xStart;
static BlockLink_t *pxEnd = NULL; /* NULL until the heap is built; never XORed */

static size_t xFreeBytesRemaining = 0U;
static size_t xMinimumEverFreeBytesRemaining = 0U;
static size_t xNumberOfSuccessfulAllocations = 0U;
static size_t xNumberOfSuccessfulFrees = 0U;

#if configENABLE_HEAP_PROTECTOR
/* One XOR both encodes and decodes a stored link. */
static portPOINTER_SIZE_TYPE xHeapCanary;
#define heapPROTECT_BLOCK_POINTER(p) \
    ((BlockLink_t *)((portPOINTER_SIZE_TYPE)(p) ^ xHeapCanary))
#ifdef HEAP5_REGIONS
/* heap_5 bounds a block pointer by the regions' hull (gaps included). */
static uint8_t *pucHeapLowAddress = NULL;
static uint8_t *pucHeapHighAddress = NULL;
#define heapBLOCK_IN_HEAP(p) \
    ((uint8_t *)(p) >= pucHeapLowAddress && (uint8_t *)(p) < pucHeapHighAddress)
#else
#define heapBLOCK_IN_HEAP(p) \
    ((uint8_t *)(p) >= &ucHeap[0] && (uint8_t *)(p) < &ucHeap[configTOTAL_HEAP_SIZE])
#endif
#else
#define heapPROTECT_BLOCK_POINTER(p) ((BlockLink_t *)(p))
#define heapBLOCK_IN_HEAP(p)         1
#endif

/* What an allocated block's link holds. */
#if configENABLE_HEAP_PROTECTOR && configHEAP_PROTECT_ALLOCATED
#define heapALLOCATED_LINK heapPROTECT_BLOCK_POINTER(NULL)
#else
#define heapALLOCATED_LINK ((BlockLink_t *)NULL)
#endif

#ifdef HEAP4_WITH_FREERTOS
/* Linked with the FreeRTOS kernel (the RTOS firmware, rtos/): as in heap_4, malloc and free
 * run with the scheduler suspended, and the kernel's tasks.c owns uxSchedulerSuspended.
 * Declared here rather than through task.h, whose portable.h would bring a second
 * HeapStats_t into this file. */
void vTaskSuspendAll(void);
long xTaskResumeAll(void);
static inline void prvSuspend(void) { vTaskSuspendAll(); }
static inline void prvResume(void) { (void)xTaskResumeAll(); }
#else
volatile UBaseType_t uxSchedulerSuspended = 0U;

/* Stand-ins for vTaskSuspendAll/xTaskResumeAll: no scheduler here, but the
 * counter tells a debugger that halted us mid-operation that lists may be
 * half-updated. */
static inline void prvSuspend(void) { uxSchedulerSuspended++; }
static inline void prvResume(void) { uxSchedulerSuspended--; }
#endif

static inline void prvGetCanary(void)
{
#if configENABLE_HEAP_PROTECTOR
    vApplicationGetRandomHeapCanary(&xHeapCanary);
#endif
}

#ifndef HEAP5_REGIONS
static void prvHeapInit(void)
{
    uintptr_t uxStart = (uintptr_t)ucHeap;
    uintptr_t uxTop = (uintptr_t)ucHeap + configTOTAL_HEAP_SIZE;
    BlockLink_t *pxFirst;

    prvGetCanary();
    uxStart = (uxStart + portBYTE_ALIGNMENT_MASK) & ~(uintptr_t)portBYTE_ALIGNMENT_MASK;

    /* End marker lives inside the arena, aligned down, at its top. */
    uxTop -= xHeapStructSize;
    uxTop &= ~(uintptr_t)portBYTE_ALIGNMENT_MASK;
    pxEnd = (BlockLink_t *)uxTop;
    pxEnd->xBlockSize = 0U;
    pxEnd->pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(NULL);

    /* One free block spans everything from the aligned start to pxEnd. */
    pxFirst = (BlockLink_t *)uxStart;
    pxFirst->xBlockSize = (size_t)(uxTop - uxStart);
    pxFirst->pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(pxEnd);

    xStart.pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(pxFirst);
    xStart.xBlockSize = 0U;

    xFreeBytesRemaining = pxFirst->xBlockSize;
    xMinimumEverFreeBytesRemaining = pxFirst->xBlockSize;
}
#else
void vPortDefineHeapRegions(const HeapRegion_t *const pxHeapRegions)
{
    BlockLink_t *pxPrevMarker = NULL;
    size_t xTotal = 0U;

    if (pxEnd != NULL || pxHeapRegions == NULL) {
        return; /* defined once only */
    }
    prvGetCanary();
    for (const HeapRegion_t *r = pxHeapRegions; r->xSizeInBytes > 0U; r++) {
        uintptr_t uxStart = (uintptr_t)r->pucStartAddress;
        size_t xSize = r->xSizeInBytes;

        /* Skip to the alignment; the skipped bytes are lost to the region. */
        if ((uxStart & portBYTE_ALIGNMENT_MASK) != 0U) {
            uintptr_t a = (uxStart + portBYTE_ALIGNMENT_MASK) & ~(uintptr_t)portBYTE_ALIGNMENT_MASK;
            if (xSize <= a - uxStart) {
                continue;
            }
            xSize -= a - uxStart;
            uxStart = a;
        }
        /* Regions must ascend and leave room for a block and the marker. */
        if ((pxPrevMarker != NULL && uxStart <= (uintptr_t)pxPrevMarker) ||
            xSize < heapMINIMUM_BLOCK_SIZE + xHeapStructSize) {
            continue;
        }
        uintptr_t uxMarker = (uxStart + xSize - xHeapStructSize) & ~(uintptr_t)portBYTE_ALIGNMENT_MASK;
        BlockLink_t *pxMarker = (BlockLink_t *)uxMarker;
        BlockLink_t *pxFirst = (BlockLink_t *)uxStart;

        pxMarker->xBlockSize = 0U;
        pxMarker->pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(NULL);
        pxFirst->xBlockSize = (size_t)(uxMarker - uxStart);
        pxFirst->pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(pxMarker);

        /* The previous region's marker links on to this region. */
        if (pxPrevMarker == NULL) {
            xStart.pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(pxFirst);
            xStart.xBlockSize = 0U;
#if configENABLE_HEAP_PROTECTOR
            pucHeapLowAddress = (uint8_t *)pxFirst;
#endif
        } else {
            pxPrevMarker->pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(pxFirst);
        }
#if configENABLE_HEAP_PROTECTOR
        pucHeapHighAddress = (uint8_t *)pxFirst + pxFirst->xBlockSize;
#endif
        pxPrevMarker = pxMarker;
        pxEnd = pxMarker;
        xTotal += pxFirst->xBlockSize;
    }
    xFreeBytesRemaining = xTotal;
    xMinimumEverFreeBytesRemaining = xTotal;
}
#endif

/* Insert a free block in address order and merge it with its physical
 * neighbours, so the list never holds two adjacent free blocks. */
static void prvInsertBlockIntoFreeList(BlockLink_t *pxBlock)
{
    BlockLink_t *pxIter = &xStart;
    BlockLink_t *pxNext;
    uint8_t *puc;

    while ((pxNext = heapPROTECT_BLOCK_POINTER(pxIter->pxNextFreeBlock)) < pxBlock) {
        pxIter = pxNext;
    }

    /* Merge with the free block just below? (xStart is not in the arena; a
     * heap_5 marker has size 0 and never reaches a block.) */
    puc = (uint8_t *)pxIter;
    if (pxIter != &xStart && puc + pxIter->xBlockSize == (uint8_t *)pxBlock) {
        pxIter->xBlockSize += pxBlock->xBlockSize;
        pxBlock = pxIter;
    }

    /* Merge with the free block just above (never with pxEnd; a heap_5
     * region marker right above is absorbed: size 0, it leaves the list). */
    puc = (uint8_t *)pxBlock;
    if (puc + pxBlock->xBlockSize == (uint8_t *)pxNext && pxNext != pxEnd) {
        pxBlock->xBlockSize += pxNext->xBlockSize;
        pxBlock->pxNextFreeBlock = pxNext->pxNextFreeBlock; /* stays encoded */
    } else {
        pxBlock->pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(pxNext);
    }

    if (pxIter != pxBlock) {
        pxIter->pxNextFreeBlock = heapPROTECT_BLOCK_POINTER(pxBlock);
    }
}

__attribute__((noinline)) void *pvPortMalloc(size_t xWantedSize)
{
    BlockLink_t *pxPrev, *pxBlock, *pxNew;
    void *pvReturn = NULL;
    size_t xAdd;

    prvSuspend();
#ifndef HEAP5_REGIONS
    if (pxEnd == NULL) {
        prvHeapInit();
    }
#else
    if (pxEnd == NULL) {
        prvResume();
        return NULL; /* vPortDefineHeapRegions not called yet */
    }
#endif

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
        /* First fit in address order (heap_5 markers have size 0: skipped). */
        pxPrev = &xStart;
        pxBlock = heapPROTECT_BLOCK_POINTER(xStart.pxNextFreeBlock);
        while (pxBlock->xBlockSize < xWantedSize &&
               pxBlock->pxNextFreeBlock != heapPROTECT_BLOCK_POINTER(NULL)) {
            pxPrev = pxBlock;
            pxBlock = heapPROTECT_BLOCK_POINTER(pxBlock->pxNextFreeBlock);
            if (!heapBLOCK_IN_HEAP(pxBlock)) {
                prvResume();
                return NULL; /* damaged link: refuse rather than follow it */
            }
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
            pxBlock->pxNextFreeBlock = heapALLOCATED_LINK;
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

    /* Only a block inside the heap that looks allocated and unlinked is
     * accepted; anything else is a double free or an overwritten header,
     * which we refuse to spread into the free list. */
    if (!heapBLOCK_IN_HEAP(pxLink) || !heapBLOCK_IS_ALLOCATED(pxLink) ||
        pxLink->pxNextFreeBlock != heapALLOCATED_LINK) {
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

/* Walks the free list as it stands: every entry up to pxEnd counts as a free
 * block, heap_5's zero-size region markers included; they are left out of
 * the smallest size only. Largest/smallest are whole block sizes. */
void vPortGetHeapStats(HeapStats_t *pxHeapStats)
{
    size_t xBlocks = 0U, xMax = 0U, xMin = SIZE_MAX;

    prvSuspend();
    BlockLink_t *pxBlock = heapPROTECT_BLOCK_POINTER(xStart.pxNextFreeBlock);
    if (pxBlock != NULL) {
        while (pxBlock != pxEnd && heapBLOCK_IN_HEAP(pxBlock)) {
            xBlocks++;
            if (pxBlock->xBlockSize > xMax) {
                xMax = pxBlock->xBlockSize;
            }
            if (pxBlock->xBlockSize != 0U && pxBlock->xBlockSize < xMin) {
                xMin = pxBlock->xBlockSize;
            }
            pxBlock = heapPROTECT_BLOCK_POINTER(pxBlock->pxNextFreeBlock);
        }
    }
    prvResume();

    pxHeapStats->xAvailableHeapSpaceInBytes = xFreeBytesRemaining;
    pxHeapStats->xSizeOfLargestFreeBlockInBytes = xMax;
    pxHeapStats->xSizeOfSmallestFreeBlockInBytes = xMin;
    pxHeapStats->xNumberOfFreeBlocks = xBlocks;
    pxHeapStats->xMinimumEverFreeBytesRemaining = xMinimumEverFreeBytesRemaining;
    pxHeapStats->xNumberOfSuccessfulAllocations = xNumberOfSuccessfulAllocations;
    pxHeapStats->xNumberOfSuccessfulFrees = xNumberOfSuccessfulFrees;
}

#ifdef HEAP4_HOST_TEST
void heap4_test_view(heap4_view_t *v)
{
    v->xStart = &xStart;
    v->pxEnd = pxEnd;
#ifndef HEAP5_REGIONS
    v->ucHeap = ucHeap;
    v->heap_size = configTOTAL_HEAP_SIZE;
#else
    v->ucHeap = NULL;
    v->heap_size = 0;
#endif
    v->xFreeBytesRemaining = xFreeBytesRemaining;
    v->xMinimumEverFreeBytesRemaining = xMinimumEverFreeBytesRemaining;
    v->xNumberOfSuccessfulAllocations = xNumberOfSuccessfulAllocations;
    v->xNumberOfSuccessfulFrees = xNumberOfSuccessfulFrees;
    v->xHeapStructSize = xHeapStructSize;
#if configENABLE_HEAP_PROTECTOR
    v->xHeapCanary = xHeapCanary;
#else
    v->xHeapCanary = 0;
#endif
}
#endif
