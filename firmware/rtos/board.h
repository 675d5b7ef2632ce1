/* board.h - what the RTOS firmware asks of a board (rtos/board_<name>.c): its serial port,
 * one periodic hardware timer interrupt, and the vector table that routes the kernel's three
 * handlers (vPortSVCHandler, xPortPendSVHandler, xPortSysTickHandler) and that timer. */
#ifndef BOARD_H
#define BOARD_H

#include <stdint.h>

/* "mps2-an385" or "netduinoplus2" (the QEMU machine name). */
extern const char board_name[];

/* Serial port on, timer off. Called once from main, before any task exists. */
void board_init(void);

/* Writes the string to the serial port (QEMU's first serial device), waiting for the
 * transmitter: no buffering, so a line is out before the call returns. */
void board_serial_write(const char *s);

/* Starts the hardware timer: a periodic interrupt at hz, at an NVIC priority from which FreeRTOS
 * FromISR calls are allowed. Its handler clears the timer and calls timing_timer_isr(). */
void board_timer_start(uint32_t hz);

/* The timer's counts per period (its interrupt's period), and how far into the current period
 * it is (0 .. period - 1); board_timer_wrapped: a period ended and its interrupt has not been
 * taken yet. Together with the interrupt count they give the timer's time to one count. */
uint32_t board_timer_period_counts(void);
uint32_t board_timer_position(void);
int board_timer_wrapped(void);

/* Shared by the boards' files: the NVIC registers of a device interrupt. */
static inline void board_nvic_enable(uint32_t irq, uint8_t priority)
{
    *(volatile uint8_t *)(0xE000E400u + irq) = priority;                  /* NVIC_IPRn */
    *(volatile uint32_t *)(0xE000E100u + 4u * (irq / 32u)) = 1u << (irq % 32u); /* NVIC_ISERn */
}

/* The application's side of the timer interrupt (rtos/timing.c). */
void timing_timer_isr(void);

#endif
