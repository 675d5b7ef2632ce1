/* fault.c - a test firmware that HardFaults during its "load" phase: it
 * allocates from the heap_4 allocator, then executes an undefined instruction
 * in model_load (a UsageFault, escalated to HardFault: the configurable
 * faults are not enabled). HardFault_Handler spins, as a real one often does.
 * memlife's tests run it to prove a fault is reported as a fault, not as a
 * breakpoint that was never reached. Self-contained startup, no C library. */
#include <stdint.h>

#include "../src/heap4.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;

void *g_model;

__attribute__((noinline)) static void decode_layer(void)
{
    __asm__ volatile("udf #0");
}

__attribute__((noinline, used)) void model_load(void)
{
    g_model = pvPortMalloc(64u);
    decode_layer();
}

__attribute__((noreturn)) void Reset_Handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0u;
    model_load();
    for (;;) {
    }
}

__attribute__((noinline, used)) void HardFault_Handler(void)
{
    for (;;) {
    }
}

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack, Reset_Handler, HardFault_Handler, HardFault_Handler,
    HardFault_Handler, HardFault_Handler, HardFault_Handler, 0, 0, 0, 0, HardFault_Handler,
    HardFault_Handler, 0, HardFault_Handler, HardFault_Handler,
};
