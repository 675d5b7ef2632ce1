/* board_vectors.h - the core part of an RTOS board's vector table (the first 16 entries),
 * shared by the boards' files; each appends its device interrupts. The reset path and the
 * fault handlers are src/startup.c's; SVCall, PendSV and SysTick go straight to the FreeRTOS
 * port's handlers (the port checks at start-up that SVCall and PendSV do). */
#ifndef BOARD_VECTORS_H
#define BOARD_VECTORS_H

#include <stdint.h>

typedef void (*vector_t)(void);

extern uint32_t _estack;
void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);
void vPortSVCHandler(void);
void xPortPendSVHandler(void);
void xPortSysTickHandler(void);

#define BOARD_CORE_VECTORS                                                                         \
    (vector_t)(uintptr_t)&_estack, /* initial SP (the main stack: startup, then interrupts) */    \
        Reset_Handler, Default_Handler, /* NMI */                                                  \
        HardFault_Handler, HardFault_Handler, /* MemManage */                                      \
        HardFault_Handler,                    /* BusFault */                                       \
        HardFault_Handler,                    /* UsageFault */                                     \
        0, 0, 0, 0, vPortSVCHandler, Default_Handler, /* DebugMon */                               \
        0, xPortPendSVHandler, xPortSysTickHandler

#endif
