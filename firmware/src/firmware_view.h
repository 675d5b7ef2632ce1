/* firmware_view.h - what the firmware's own heap API says, captured for a
 * debugger right before every model_release call.
 *
 * Contract (memlife's end-to-end tests rely on it): the global
 * g_firmware_view always starts with `uint32_t captures`; main() calls
 * firmware_view_capture() immediately before each model_release call, with
 * no allocation or free in between, so at the Nth stop at model_release's
 * entry captures == N and every other field is exactly what the allocator's
 * own functions return at that moment. The struct type depends on the
 * allocator the ELF was built with (see firmware/README.md). */
#ifndef FIRMWARE_VIEW_H
#define FIRMWARE_VIEW_H

#include <stddef.h>
#include <stdint.h>

#if defined(ALLOC_HEAP4)
#include "heap4.h"
/* heap4, heap4p, heap5, heap5p */
struct firmware_view_freertos {
    uint32_t captures;
    HeapStats_t stats;                  /* vPortGetHeapStats */
    size_t free_heap_size;              /* xPortGetFreeHeapSize */
    size_t minimum_ever_free_heap_size; /* xPortGetMinimumEverFreeHeapSize */
};
typedef struct firmware_view_freertos firmware_view_t;
#elif defined(ALLOC_TLSF)
#include "heap_caps.h"
#define FV_MAX_HEAPS 4
#define FV_MAX_CAPS  8
/* tlsf, tlsf_fixed, tlsfp, tlsfpc */
struct firmware_view_espidf {
    uint32_t captures;
    uint32_t heap_count;                         /* registered heaps */
    multi_heap_info_t heaps[FV_MAX_HEAPS];       /* multi_heap_get_info, registration order */
    uint32_t caps_count;                         /* entries used in the four arrays below */
    uint32_t caps[FV_MAX_CAPS];                  /* the masks asked about */
    multi_heap_info_t caps_info[FV_MAX_CAPS];    /* heap_caps_get_info(caps[i]) */
    size_t caps_free_size[FV_MAX_CAPS];          /* heap_caps_get_free_size(caps[i]) */
    size_t caps_largest_free_block[FV_MAX_CAPS]; /* heap_caps_get_largest_free_block(caps[i]) */
};
typedef struct firmware_view_espidf firmware_view_t;
#elif defined(ALLOC_NANO)
#include <malloc.h>
/* newlib-nano and newlib's full malloc (dl) */
struct firmware_view_newlib {
    uint32_t captures;
    struct mallinfo info; /* newlib's own mallinfo() */
};
typedef struct firmware_view_newlib firmware_view_t;
#endif

#ifndef ALLOC_ESPIDF
extern firmware_view_t g_firmware_view;
/* Fills g_firmware_view and counts the capture. */
void firmware_view_capture(void);
/* ITERATIONS builds: cheap cross-checks of the captured figures; returns a
 * description of the first inconsistency, or NULL. */
const char *firmware_view_inconsistency(void);
#endif

#endif
