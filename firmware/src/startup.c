/* startup.c - Cortex-M4 vector table and reset path (no CMSIS, no vendor
 * code): copy .data from flash, zero .bss, run main. Faults end in
 * HardFault_Handler, which reports (ITERATIONS builds) or parks the core in
 * fw_halted where a debugger can find it.
 *
 * The RTOS firmware (rtos/) keeps the reset path and the fault handlers but
 * brings its board's own vector table (RTOS_BOARD_VECTORS: the kernel's
 * handlers and the board's timer interrupt); a hard-float build turns the FPU
 * on before any C code could use it. */
#include <stdint.h>

#include "mem.h"

extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
int main(void);

__attribute__((noreturn)) void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);

__attribute__((noreturn)) void Reset_Handler(void)
{
    uint32_t *src = &_sidata, *dst = &_sdata;
#ifdef __ARM_FP
    /* CPACR: full access to CP10 and CP11 (the FPU), then let it take effect. */
    *(volatile uint32_t *)0xE000ED88u |= 0xFu << 20;
    __asm__ volatile("dsb\n isb" ::: "memory");
#endif
    while (dst < &_edata) *dst++ = *src++;
    for (dst = &_sbss; dst < &_ebss;) *dst++ = 0u;
    (void)main();
    fw_halted();
}

__attribute__((noinline, used)) void HardFault_Handler(void)
{
    fw_fail("HardFault", FW_EXIT_HARDFAULT);
}

void Default_Handler(void)
{
    fw_fail("unexpected exception", FW_EXIT_HARDFAULT);
}

#ifndef RTOS_BOARD_VECTORS
typedef void (*vector_t)(void);

/* Core exceptions only: nothing here enables a peripheral interrupt. */
__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack, /* initial SP */
    Reset_Handler,
    Default_Handler,   /* NMI */
    HardFault_Handler,
    HardFault_Handler, /* MemManage (escalates to HardFault when disabled) */
    HardFault_Handler, /* BusFault */
    HardFault_Handler, /* UsageFault */
    0, 0, 0, 0,
    Default_Handler,   /* SVCall */
    Default_Handler,   /* DebugMon */
    0,
    Default_Handler,   /* PendSV */
    Default_Handler,   /* SysTick */
};
#endif
