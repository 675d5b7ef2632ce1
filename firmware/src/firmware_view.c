/* firmware_view.c - fills g_firmware_view from the allocator's own API (the
 * contract is in firmware_view.h) and, for the ITERATIONS builds, checks
 * that the figures agree with each other. */
#include "firmware_view.h"

#include "mem.h"
#include "scenario.h"

firmware_view_t g_firmware_view;

#if defined(ALLOC_HEAP4)
void firmware_view_capture(void)
{
    vPortGetHeapStats(&g_firmware_view.stats);
    g_firmware_view.free_heap_size = xPortGetFreeHeapSize();
    g_firmware_view.minimum_ever_free_heap_size = xPortGetMinimumEverFreeHeapSize();
    g_firmware_view.captures++;
}

const char *firmware_view_inconsistency(void)
{
    const struct firmware_view_freertos *v = &g_firmware_view;
    const HeapStats_t *s = &v->stats;
    if (s->xAvailableHeapSpaceInBytes != v->free_heap_size) return "stats: available != free";
    if (s->xMinimumEverFreeBytesRemaining != v->minimum_ever_free_heap_size)
        return "stats: minimum ever != getter";
    if (v->minimum_ever_free_heap_size > v->free_heap_size) return "minimum ever > free";
    if (s->xSizeOfLargestFreeBlockInBytes > v->free_heap_size) return "largest > free";
    if (s->xNumberOfFreeBlocks == 0u || s->xSizeOfSmallestFreeBlockInBytes >
                                            s->xSizeOfLargestFreeBlockInBytes)
        return "free blocks / smallest";
    if (s->xNumberOfSuccessfulAllocations <= s->xNumberOfSuccessfulFrees)
        return "no block allocated at model_release";
    return NULL;
}
#elif defined(ALLOC_TLSF)
/* Each heap alone, both together, and a mask no heap has. */
static const uint32_t s_caps[] = {
    MALLOC_CAP_8BIT,     /* both heaps */
    MALLOC_CAP_DEFAULT,  /* both heaps */
    MALLOC_CAP_INTERNAL, /* heap 0 */
    MALLOC_CAP_DMA,      /* heap 0 */
    MALLOC_CAP_SPIRAM,   /* heap 1 */
    MALLOC_CAP_32BIT,    /* both heaps */
    MALLOC_CAP_EXEC,     /* none */
};
#define N_CAPS (sizeof(s_caps) / sizeof(s_caps[0]))
_Static_assert(N_CAPS <= FV_MAX_CAPS, "FV_MAX_CAPS too small");

void firmware_view_capture(void)
{
    struct firmware_view_espidf *v = &g_firmware_view;
    uint32_t n = 0;
    while (n < FV_MAX_HEAPS && heap_caps_registered_info(n, &v->heaps[n])) n++;
    v->heap_count = n;
    v->caps_count = N_CAPS;
    for (uint32_t i = 0; i < N_CAPS; i++) {
        v->caps[i] = s_caps[i];
        heap_caps_get_info(&v->caps_info[i], s_caps[i]);
        v->caps_free_size[i] = heap_caps_get_free_size(s_caps[i]);
        v->caps_largest_free_block[i] = heap_caps_get_largest_free_block(s_caps[i]);
    }
    v->captures++;
}

const char *firmware_view_inconsistency(void)
{
    const struct firmware_view_espidf *v = &g_firmware_view;
    size_t free_sum = 0, alloc_sum = 0;
    if (v->heap_count != 2u) return "heap count";
    for (uint32_t h = 0; h < v->heap_count; h++) {
        const multi_heap_info_t *m = &v->heaps[h];
        if (m->total_blocks != m->allocated_blocks + m->free_blocks) return "heap blocks";
        if (m->largest_free_block > m->total_free_bytes) return "heap largest > free";
        free_sum += m->total_free_bytes;
        alloc_sum += m->total_allocated_bytes;
    }
    for (uint32_t i = 0; i < v->caps_count; i++) {
        if (v->caps_free_size[i] != v->caps_info[i].total_free_bytes) return "caps free size";
        if (v->caps_largest_free_block[i] != v->caps_info[i].largest_free_block)
            return "caps largest";
    }
    /* s_caps[0] (8BIT) covers both heaps; EXEC none. */
    if (v->caps_info[0].total_free_bytes != free_sum ||
        v->caps_info[0].total_allocated_bytes != alloc_sum)
        return "8BIT != sum of the heaps";
    if (v->caps_info[N_CAPS - 1].total_blocks != 0u || v->caps_free_size[N_CAPS - 1] != 0u)
        return "EXEC mask matched a heap";
    if (v->caps_free_size[2] + v->caps_free_size[4] != v->caps_free_size[0])
        return "INTERNAL + SPIRAM != 8BIT";
    /* Only a poisoned heap can see the overrun, and it must. */
#ifdef MULTI_HEAP_POISONING
    const int expect_ok = !SCEN_OVERRUN;
#else
    const int expect_ok = 1;
#endif
    if (heap_caps_check_integrity_all(false) != expect_ok) return "integrity check";
    return NULL;
}
#elif defined(ALLOC_NANO)
#include "sysmem.h"

void firmware_view_capture(void)
{
    g_firmware_view.info = mallinfo();
    g_firmware_view.captures++;
}

const char *firmware_view_inconsistency(void)
{
    const struct mallinfo *m = &g_firmware_view.info;
    if (m->uordblks + m->fordblks != m->arena) return "mallinfo: used + free != arena";
    if ((uint32_t)m->fordblks + sysmem_headroom() != mem_free_bytes())
        return "mallinfo free != free list + headroom";
    return NULL;
}
#endif
