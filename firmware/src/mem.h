/* mem.h - the one allocation wrapper the engine uses; the allocator behind it
 * (heap4, newlib-nano, our tlsf, or ESP-IDF's heap on the ESP32-S3 app) is
 * chosen at build time. */
#ifndef MEM_H
#define MEM_H
#include <stddef.h>
#include <stdint.h>

/* Never returns NULL: on failure it calls fw_oom(where, size). */
void *mem_alloc(size_t size, const char *where);
/* May return NULL (allocations whose callers handle failure: graph_build). */
void *mem_try_alloc(size_t size, const char *where);
void mem_free(void *p);
/* Called once before the first lifecycle. */
void mem_init(void);
/* Free bytes in the allocator's own accounting (heap4: xFreeBytesRemaining;
 * nano: free-list bytes + sbrk headroom up to the 96 KiB limit; tlsf and
 * ESP-IDF: the sum of the heaps' free_bytes). */
uint32_t mem_free_bytes(void);

void fw_oom(const char *where, unsigned size);
__attribute__((noreturn)) void fw_fail(const char *why, uint32_t code);
__attribute__((noreturn)) void fw_halted(void);

/* Exit codes of the ITERATIONS builds. */
#define FW_EXIT_OOM       2u
#define FW_EXIT_HARDFAULT 3u
#define FW_EXIT_OUTPUT    4u
#define FW_EXIT_ENGINE    5u
#define FW_EXIT_HEAP      6u
#define FW_EXIT_ASSERT    7u /* configASSERT fired (the RTOS firmware) */

#endif
