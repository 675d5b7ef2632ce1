/* FreeRTOSConfig.h - the kernel configuration of the RTOS firmware (both boards).
 *
 * Chosen so that a debugger meets what most FreeRTOS firmware has: the generic task selection
 * (uxTopReadyPriority is a priority, not a bitmap), 32-bit ticks at 100 Hz, the trace facility
 * (uxTCBNumber, uxTaskGetSystemState), pxEndOfStack recorded, stacks filled with 0xa5
 * (overflow check method 2), static and dynamic allocation both possible (so the TCB has
 * ucStaticallyAllocated; the idle and timer tasks are static, the application's tasks come
 * from the heap but one), software timers, a queue registry, and configASSERT calling
 * vAssertCalled(file, line) as the official demos do.
 *
 * 100 Hz rather than the 1 kHz of many demos: QEMU 7.2 delivers a 1 kHz SysTick with 40 to 60 %
 * of its interrupts merged (lost ticks, measured on both boards against a hardware timer; none
 * lost at 100 Hz), which would trip the timing self-check with no debugger attached.
 *
 * BOARD_CPU_CLOCK_HZ comes from the Makefile: 25 MHz on mps2-an385, 168 MHz on
 * netduinoplus2 (what QEMU 7.2 clocks SysTick with when CLKSOURCE selects the core). */
#ifndef FREERTOS_CONFIG_H
#define FREERTOS_CONFIG_H

#define configCPU_CLOCK_HZ                      (BOARD_CPU_CLOCK_HZ)
#define configTICK_RATE_HZ                      100
#define configTICK_TYPE_WIDTH_IN_BITS           TICK_TYPE_WIDTH_32_BITS
#define configUSE_PREEMPTION                    1
#define configUSE_TIME_SLICING                  1
#define configUSE_PORT_OPTIMISED_TASK_SELECTION 0
#define configMAX_PRIORITIES                    6
#define configMINIMAL_STACK_SIZE                ((unsigned short)128) /* words */
#define configMAX_TASK_NAME_LEN                 12
#define configIDLE_SHOULD_YIELD                 1

/* Memory: dynamic tasks from pvPortMalloc (src/heap4.c, FreeRTOS heap_4's layout); static
 * ones for the kernel's own idle and timer tasks (the kernel supplies their memory). */
#define configSUPPORT_DYNAMIC_ALLOCATION        1
#define configSUPPORT_STATIC_ALLOCATION         1
#define configKERNEL_PROVIDED_STATIC_MEMORY     1
#define configAPPLICATION_ALLOCATED_HEAP        0
#define configUSE_MALLOC_FAILED_HOOK            0 /* only FreeRTOS's own heap_N.c call it */

/* What a debugger reads. */
#define configUSE_TRACE_FACILITY                1
#define configRECORD_STACK_HIGH_ADDRESS         1
#define configCHECK_FOR_STACK_OVERFLOW          2
#define configQUEUE_REGISTRY_SIZE               4
#define configUSE_STATS_FORMATTING_FUNCTIONS    0

#define configUSE_IDLE_HOOK                     0
#define configUSE_TICK_HOOK                     0
#define configUSE_MUTEXES                       1
#define configUSE_COUNTING_SEMAPHORES           0
#define configUSE_TASK_NOTIFICATIONS            1
#define configUSE_CO_ROUTINES                   0

#define configUSE_TIMERS                        1
#define configTIMER_TASK_PRIORITY               (configMAX_PRIORITIES - 1)
#define configTIMER_QUEUE_LENGTH                8
#define configTIMER_TASK_STACK_DEPTH            (configMINIMAL_STACK_SIZE * 2)

#define INCLUDE_vTaskDelete                     1
#define INCLUDE_vTaskSuspend                    1
#define INCLUDE_vTaskDelay                      1
#define INCLUDE_xTaskDelayUntil                 1
#define INCLUDE_uxTaskGetStackHighWaterMark     1
#define INCLUDE_xTaskGetCurrentTaskHandle       1
#define INCLUDE_xTaskGetSchedulerState          1
#define INCLUDE_xTaskGetIdleTaskHandle          1

/* Interrupt priorities (8-bit values: only the implemented top bits count, so these hold for
 * any NVIC with 3 or more priority bits). The kernel's own PendSV and SysTick run at the
 * lowest priority; an ISR that calls a FromISR API must be at RTOS_SYSCALL_PRIORITY or below
 * (numerically at or above). configPRIO_BITS is left undefined on purpose: the port then only
 * checks that these values fit the bits it finds. */
#define configKERNEL_INTERRUPT_PRIORITY         0xFF
#define configMAX_SYSCALL_INTERRUPT_PRIORITY    0xA0
#define configMAX_API_CALL_INTERRUPT_PRIORITY   configMAX_SYSCALL_INTERRUPT_PRIORITY

/* configASSERT reports through the application's vAssertCalled (rtos/app.c), which prints the
 * place on the serial port and parks: a debugger breaks there. */
void vAssertCalled(const char *pcFile, unsigned long ulLine);
#define configASSERT(x)                                                                            \
    do {                                                                                           \
        if ((x) == 0) vAssertCalled(__FILE__, __LINE__);                                           \
    } while (0)

/* The no-ml build calls a trace hook at every task switch, as firmware with a trace recorder
 * does (named as such recorders name theirs; rtos/app.c counts the switches). */
#if defined(SCENARIO_NO_ML)
void xTraceTaskSwitch(void);
#define traceTASK_SWITCHED_IN() xTraceTaskSwitch()
#endif

#endif
