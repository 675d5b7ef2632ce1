/* mem.c - allocation wrapper and the failure paths.
 *
 * fw_oom and fw_halted are noinline and external so that a debugger can put a
 * breakpoint on them; the looping (device) build parks in fw_halted, the
 * ITERATIONS build reports through semihosting and exits nonzero. */
#include "mem.h"

#include "scenario.h"
#include "semihost.h"

#if defined(ALLOC_HEAP4)
#include "heap4.h"
#define ALLOC(n) pvPortMalloc(n)
#define FREE(p)  vPortFree(p)
#elif defined(ALLOC_TLSF)
/* Our TLSF heaps with ESP-IDF's layout: internal DRAM first, then the second
 * region (heap_caps_malloc tries them in that order for MALLOC_CAP_DEFAULT). */
#include "heap_caps.h"
#define ALLOC(n) heap_caps_malloc((n), MALLOC_CAP_DEFAULT)
#define FREE(p)  heap_caps_free(p)
#elif defined(ALLOC_ESPIDF)
/* The ESP-IDF application (firmware/esp32s3): ESP-IDF's own heap, none of ours. */
#include "esp_heap_caps.h"
#define ALLOC(n) heap_caps_malloc((n), MALLOC_CAP_8BIT)
#define FREE(p)  heap_caps_free(p)
#else
#include <malloc.h>
#include <stdlib.h>
#include "sysmem.h"
#define ALLOC(n) malloc(n)
#define FREE(p)  free(p)
#endif

__attribute__((noinline, used)) void fw_halted(void)
{
    for (;;) {
        __asm__ volatile("" ::: "memory");
    }
}

__attribute__((noinline)) void fw_fail(const char *why, uint32_t code)
{
#ifdef ITERATIONS
    extern uint32_t g_iteration;
    sh_write0("FAILED " SCENARIO_NAME "/" ALLOC_NAME ": ");
    sh_write0(why);
    sh_write0(" (iteration ");
    sh_write_dec(g_iteration + 1u);
    sh_write0(")");
    sh_write0("\n");
    sh_exit_fail(code);
#else
    (void)why;
    (void)code;
    fw_halted();
#endif
}

__attribute__((noinline, used)) void fw_oom(const char *where, unsigned size)
{
#ifdef ITERATIONS
    sh_write0("out of memory in ");
    sh_write0(where);
    sh_write0(", size ");
    sh_write_dec(size);
    sh_write0("\n");
#else
    (void)where;
    (void)size;
#endif
    fw_fail("allocation failure", FW_EXIT_OOM);
}

void *mem_try_alloc(size_t size, const char *where)
{
    (void)where;
    return ALLOC(size);
}

void *mem_alloc(size_t size, const char *where)
{
    void *p = ALLOC(size);
    if (p == NULL) {
        fw_oom(where, (unsigned)size);
    }
    return p;
}

void mem_init(void)
{
#if defined(ALLOC_HEAP4) && defined(HEAP5_REGIONS)
    extern const HeapRegion_t xHeapRegions[];
    vPortDefineHeapRegions(xHeapRegions);
#elif defined(ALLOC_TLSF)
    heap_caps_init();
#elif defined(ALLOC_DLMALLOC)
    /* dlmalloc asks sbrk for the request plus its top pad, page-rounded:
     * leave that much below the limit so the first call succeeds and the
     * whole arena becomes its top chunk. */
    void *volatile p = malloc(sysmem_headroom() - 8192u);
    free(p);
#elif defined(ALLOC_NANO)
    /* Take the whole 96 KiB from sbrk once and give it back: nano then works
     * in a fixed arena like heap4 (one free chunk at start-up). Without this,
     * nano 3.3 never merges a free tail chunk with fresh sbrk memory, and
     * pinned blocks (leaks, long-lived records) make the break creep up
     * until the limit: the first lifecycle would also differ from the rest. */
    void *volatile p = malloc(sysmem_headroom() - 16u); /* volatile: GCC would
                                                          * drop a malloc/free pair */
    free(p);
#endif
}

void mem_free(void *p)
{
    FREE(p);
}

uint32_t mem_free_bytes(void)
{
#if defined(ALLOC_HEAP4)
    return (uint32_t)xPortGetFreeHeapSize();
#elif defined(ALLOC_TLSF)
    /* Sum of the heaps' free_bytes (block size words included). */
    return (uint32_t)heap_caps_get_free_size(MALLOC_CAP_DEFAULT);
#elif defined(ALLOC_ESPIDF)
    return (uint32_t)heap_caps_get_free_size(MALLOC_CAP_8BIT);
#elif defined(ALLOC_DLMALLOC)
    /* dlmalloc: its own mallinfo (free chunks + top) plus sbrk headroom. */
    return (uint32_t)mallinfo().fordblks + sysmem_headroom();
#else
    /* Walk nano's free list ourselves: mallinfo() would drag stdio in (its
     * object file also holds malloc_stats). Layout: docs/allocators/newlib-nano.md. */
    struct nano_chunk {
        long size;
        struct nano_chunk *next;
    };
    extern struct nano_chunk *__malloc_free_list;
    uint32_t sum = 0;
    for (const struct nano_chunk *c = __malloc_free_list; c != NULL; c = c->next) {
        sum += (uint32_t)c->size;
    }
    return sum + sysmem_headroom();
#endif
}
