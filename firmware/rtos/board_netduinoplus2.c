/* board_netduinoplus2.c - QEMU `-M netduinoplus2`: an STM32F405 (Cortex-M4F, FPU on) whose
 * SysTick QEMU 7.2 clocks at 168 MHz. 1 MiB flash at 0x08000000 (aliased at 0), 192 KiB of
 * contiguous SRAM at 0x20000000 in QEMU 7.2 (ld/netduinoplus2.ld); USART1 at 0x40011000 (QEMU's
 * first serial device), TIM2 at 0x40000000 (interrupt 28). */
#include "board.h"
#include "board_vectors.h"

#define TIM2_BASE      0x40000000u
#define TIM2_IRQ       28u
#define USART1_BASE    0x40011000u
/* What QEMU 7.2's STM32 timer model counts at, whatever the prescaler clock would be on the
 * chip: measured against SysTick, see firmware/README.md. */
#define TIM_CLOCK_HZ   1000000000u
#define TIM_PRESCALE   10000u /* 100 kHz counter */
#define TIMER_PRIORITY 0xC0u  /* below configMAX_SYSCALL_INTERRUPT_PRIORITY (0xA0) */

#define REG(base, off) (*(volatile uint32_t *)((base) + (off)))
/* USART */
#define USART_SR  0x00u
#define USART_DR  0x04u
#define USART_CR1 0x0Cu
#define USART_SR_TXE  (1u << 7)
#define USART_CR1_UE  (1u << 13)
#define USART_CR1_TE  (1u << 3)
/* general-purpose timer */
#define TIM_CR1  0x00u
#define TIM_DIER 0x0Cu
#define TIM_SR   0x10u
#define TIM_EGR  0x14u
#define TIM_CNT  0x24u
#define TIM_PSC  0x28u
#define TIM_ARR  0x2Cu
#define TIM_CR1_CEN  1u
#define TIM_DIER_UIE 1u
#define TIM_EGR_UG   1u
#define TIM_SR_UIF   1u

const char board_name[] = "netduinoplus2";

void board_init(void)
{
    REG(TIM2_BASE, TIM_CR1) = 0u;
    REG(USART1_BASE, USART_CR1) = USART_CR1_UE | USART_CR1_TE;
}

void board_serial_write(const char *s)
{
    for (; *s != '\0'; s++) {
        while ((REG(USART1_BASE, USART_SR) & USART_SR_TXE) == 0u) {
        }
        REG(USART1_BASE, USART_DR) = (uint8_t)*s;
    }
}

void board_timer_start(uint32_t hz)
{
    REG(TIM2_BASE, TIM_PSC) = TIM_PRESCALE - 1u;
    REG(TIM2_BASE, TIM_ARR) = TIM_CLOCK_HZ / TIM_PRESCALE / hz - 1u;
    REG(TIM2_BASE, TIM_EGR) = TIM_EGR_UG;
    REG(TIM2_BASE, TIM_SR) = 0u;
    REG(TIM2_BASE, TIM_DIER) = TIM_DIER_UIE;
    REG(TIM2_BASE, TIM_CR1) = TIM_CR1_CEN;
    board_nvic_enable(TIM2_IRQ, TIMER_PRIORITY);
}

uint32_t board_timer_period_counts(void)
{
    return REG(TIM2_BASE, TIM_ARR) + 1u;
}

uint32_t board_timer_position(void)
{
    /* On the chip CNT counts up from 0 to ARR; QEMU 7.2's model never resets it (it counts
     * since the start), so take it modulo the period: right for both. */
    return REG(TIM2_BASE, TIM_CNT) % board_timer_period_counts();
}

int board_timer_wrapped(void)
{
    return (REG(TIM2_BASE, TIM_SR) & TIM_SR_UIF) != 0u;
}

void TIM2_IRQHandler(void)
{
    REG(TIM2_BASE, TIM_SR) = 0u; /* UIF is cleared by writing 0 */
    timing_timer_isr();
}

/* 16 core exceptions, then the STM32F405's 82 interrupts. */
__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16 + 82] = {
    BOARD_CORE_VECTORS,
    [16 + TIM2_IRQ] = TIM2_IRQHandler,
};
