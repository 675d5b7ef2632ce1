/* sparse_heap.c - the sparse-walk benchmark's heap (docs/BENCHMARKS.md): FreeRTOS heap_4 with
 * its arena in mps2-an386's PSRAM (ld/mps2-an386-psram.ld), filled with BENCH_BLOCKS
 * allocations of equal size spread over about 70% of the arena, every other one freed, so
 * the walk meets BENCH_BLOCKS blocks however large the arena is. Parks in bench_done.
 *
 * Built by tools/bench/sparse_walk.py with -DconfigTOTAL_HEAP_SIZE=... -DBENCH_BLOCKS=... */
#include <stddef.h>
#include <stdint.h>

#include "heap4.h"

#ifndef BENCH_BLOCKS
#define BENCH_BLOCKS 100
#endif

static void *slots[BENCH_BLOCKS];
volatile uint32_t bench_allocated;

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);

/* Where the benchmark stops: the heap is complete. */
__attribute__((noinline, used)) void bench_done(void)
{
    __asm volatile("" ::: "memory");
}

__attribute__((noreturn)) void Reset_Handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0u;
    (void)main();
    for (;;) {
    }
}

static void Spin_Handler(void)
{
    for (;;) {
    }
}

typedef void (*vector_t)(void);
__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack, Reset_Handler, Spin_Handler, Spin_Handler,
    Spin_Handler, Spin_Handler, Spin_Handler, 0, 0, 0, 0, Spin_Handler, Spin_Handler, 0,
    Spin_Handler, Spin_Handler,
};

int main(void)
{
    size_t size = (configTOTAL_HEAP_SIZE / 10u * 7u) / BENCH_BLOCKS;
    size = size > 16u ? size - 8u : 8u;
    for (uint32_t i = 0; i < BENCH_BLOCKS; i++) {
        slots[i] = pvPortMalloc(size);
        if (slots[i] != NULL) bench_allocated++;
    }
    for (uint32_t i = 1; i < BENCH_BLOCKS; i += 2) vPortFree(slots[i]);
    bench_done();
    for (;;) {
    }
}
