/* board_mps2_an385.c - QEMU `-M mps2-an385`: Arm's MPS2 FPGA image AN385, a Cortex-M3 at
 * 25 MHz without FPU. Code in SSRAM1 at 0x00000000 (4 MiB, where the core boots), data and
 * heap in SSRAM2/3 at 0x20000000 (4 MiB); CMSDK APB peripherals: TIMER0 at 0x40000000
 * (interrupt 8, clocked at 25 MHz), UART0 at 0x40004000 (QEMU's first serial device). */
#include "board.h"
#include "board_vectors.h"

#define TIMER0_BASE    0x40000000u
#define TIMER0_IRQ     8u
#define UART0_BASE     0x40004000u
#define PCLK_HZ        25000000u
#define TIMER_PRIORITY 0xC0u /* below configMAX_SYSCALL_INTERRUPT_PRIORITY (0xA0) */

#define REG(base, off) (*(volatile uint32_t *)((base) + (off)))
/* CMSDK APB UART */
#define UART_DATA    0x00u
#define UART_STATE   0x04u
#define UART_CTRL    0x08u
#define UART_BAUDDIV 0x10u
#define UART_STATE_TX_FULL 0x1u
#define UART_CTRL_TX_EN    0x1u
/* CMSDK APB timer */
#define TIMER_CTRL      0x00u
#define TIMER_RELOAD    0x08u
#define TIMER_VALUE     0x04u
#define TIMER_INTSTATUS 0x0Cu /* read: interrupt pending; write: clear */
#define TIMER_INTCLEAR  0x0Cu
#define TIMER_CTRL_EN   0x1u
#define TIMER_CTRL_IRQ  0x8u

const char board_name[] = "mps2-an385";

void board_init(void)
{
    REG(TIMER0_BASE, TIMER_CTRL) = 0u;
    REG(UART0_BASE, UART_BAUDDIV) = 16u; /* the smallest divider the UART accepts */
    REG(UART0_BASE, UART_CTRL) = UART_CTRL_TX_EN;
}

void board_serial_write(const char *s)
{
    for (; *s != '\0'; s++) {
        while (REG(UART0_BASE, UART_STATE) & UART_STATE_TX_FULL) {
        }
        REG(UART0_BASE, UART_DATA) = (uint8_t)*s;
    }
}

void board_timer_start(uint32_t hz)
{
    REG(TIMER0_BASE, TIMER_RELOAD) = PCLK_HZ / hz - 1u;
    REG(TIMER0_BASE, TIMER_CTRL) = TIMER_CTRL_EN | TIMER_CTRL_IRQ;
    board_nvic_enable(TIMER0_IRQ, TIMER_PRIORITY);
}

uint32_t board_timer_period_counts(void)
{
    return REG(TIMER0_BASE, TIMER_RELOAD) + 1u;
}

uint32_t board_timer_position(void)
{
    /* The counter runs down from RELOAD to 0. */
    return REG(TIMER0_BASE, TIMER_RELOAD) - REG(TIMER0_BASE, TIMER_VALUE);
}

int board_timer_wrapped(void)
{
    return (REG(TIMER0_BASE, TIMER_INTSTATUS) & 1u) != 0u;
}

void TIMER0_Handler(void)
{
    REG(TIMER0_BASE, TIMER_INTCLEAR) = 1u;
    timing_timer_isr();
}

/* 16 core exceptions, then the 32 interrupts of the AN385 image. */
__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16 + 32] = {
    BOARD_CORE_VECTORS,
    [16 + TIMER0_IRQ] = TIMER0_Handler,
};
