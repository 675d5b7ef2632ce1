/* timing.c - the timer interrupt and the timing self-check (in the spirit of FreeRTOS's
 * TimerDemo: a periodic event must have happened as often as the tick count says).
 *
 * The reference is the board's hardware timer, a clock of its own: its interrupt (HW_TIMER_HZ)
 * counts periods and its counter register gives the position inside the current period, so
 * its time is known to one count even when an interrupt was late. Every CHECK_PERIOD_MS the
 * Check task compares the ticks that passed with the hardware time that passed: lost ticks
 * (SysTick interrupts that could not be taken before the next one came, so two became one)
 * make the tick count fall behind. A software timer of the kernel's timer task
 * (SOFT_TIMER_TICKS) is checked against the ticks too: a starved timer task falls behind.
 * Either off by more than its tolerance calls configASSERT; PASS lines (one round in
 * PRINT_EVERY_ROUNDS), FAIL and ASSERT lines go to the serial port.
 *
 * On a board, a debugger halting the core stops SysTick but not the peripheral timer, so
 * halts lose ticks. QEMU 7.2 stops every clock of the machine while gdb holds it, so there a
 * halt by itself loses nothing: firmware/README.md ("RTOS firmware") says what does trip it.
 *
 * The Check task is created statically (its TCB and stack are not heap blocks) and computes
 * the drift in floating point, so on the Cortex-M4F its saved context is the extended (FPU)
 * frame. */
#include "app.h"

#include "board.h"
#include "mem.h"
#include "timers.h"

#define HW_TIMER_HZ        10u
#define TICKS_PER_HW_EVENT (configTICK_RATE_HZ / HW_TIMER_HZ)
#define SOFT_TIMER_TICKS   5u
#define CHECK_PERIOD_MS    1000u
/* Ticks a round may lose (or gain) against the hardware timer: half of them by default, as QEMU
 * 7.2 without -icount merges up to 30 % of the 100 Hz SysTick interrupts on a loaded 2-core
 * host (firmware/README.md); with -icount nothing is lost and a test may set g_check_tolerance
 * to 1. On a board, a debugger holding the core for half a second in a round trips it. */
#ifndef HW_TOLERANCE
#define HW_TOLERANCE 50
#endif
#define SOFT_TOLERANCE (2 * (int32_t)SOFT_TIMER_TICKS) /* one period of phase, one of slack */
#ifndef PRINT_EVERY_ROUNDS
#define PRINT_EVERY_ROUNDS 5u
#endif

volatile uint32_t g_hw_timer_events;
volatile uint32_t g_soft_timer_events;
volatile uint32_t g_check_rounds;
/* The last round's figures, for a debugger: ticks behind (-) or ahead (+) of the hardware timer
 * and of the software timer, and the first as parts per million. */
volatile int32_t g_check_hw_drift;
volatile int32_t g_check_soft_drift;
volatile float g_check_drift_ppm;
/* The tolerance in ticks per round, for the hardware timer comparison: a debugger may change it. */
volatile int32_t g_check_tolerance = HW_TOLERANCE;

static StaticTask_t check_tcb;
static StackType_t check_stack[CHECK_STACK_WORDS];

void timing_timer_isr(void)
{
    g_hw_timer_events++;
}

static void soft_timer_callback(TimerHandle_t t)
{
    (void)t;
    g_soft_timer_events++;
}

/* One reading of both clocks, taken with interrupts masked so that neither moves in between. */
typedef struct {
    uint32_t ticks;
    uint64_t hw_counts; /* hardware timer counts since it started */
    uint32_t soft;
} clocks_t;

static clocks_t read_clocks(void)
{
    clocks_t c;
    taskENTER_CRITICAL();
    c.ticks = xTaskGetTickCount();
    uint32_t position = board_timer_position();
    uint32_t periods = g_hw_timer_events;
    if (board_timer_wrapped()) {
        /* A period ended and its interrupt waits behind our mask: count it, and read the
         * position again, as the end may have come after the first read. */
        periods++;
        position = board_timer_position();
    }
    c.hw_counts = (uint64_t)periods * board_timer_period_counts() + position;
    c.soft = g_soft_timer_events;
    taskEXIT_CRITICAL();
    return c;
}

static void print_round(const char *verdict, uint32_t ticks, uint32_t hw_ticks, uint32_t soft)
{
    line_t l;
    line_start(&l, "Check: ");
    line_str(&l, verdict);
    line_str(&l, " round ");
    line_dec(&l, g_check_rounds);
    line_str(&l, ": ");
    line_dec(&l, ticks);
    line_str(&l, " ticks, timer ");
    line_dec(&l, hw_ticks);
    line_str(&l, ", soft timer ");
    line_dec(&l, soft * SOFT_TIMER_TICKS);
    line_str(&l, ", drift ");
    line_signed(&l, (int32_t)g_check_drift_ppm);
    line_str(&l, " ppm");
    line_send(&l);
}

static int within(int32_t v, int32_t tolerance)
{
    return v <= tolerance && v >= -tolerance;
}

static void check_task(void *arg)
{
    (void)arg;
    TickType_t last_wake = xTaskGetTickCount();
    /* The baseline is taken one round in, once the hardware timer has run a few periods. */
    vTaskDelayUntil(&last_wake, pdMS_TO_TICKS(CHECK_PERIOD_MS));
    clocks_t before = read_clocks();

    for (;;) {
        vTaskDelayUntil(&last_wake, pdMS_TO_TICKS(CHECK_PERIOD_MS));
        const clocks_t now = read_clocks();
        const uint32_t ticks = now.ticks - before.ticks;
        const uint32_t soft = now.soft - before.soft;
        /* The hardware time in ticks, rounded to the nearest. */
        const uint64_t per_tick = board_timer_period_counts() / TICKS_PER_HW_EVENT;
        const uint32_t hw_ticks =
            (uint32_t)((now.hw_counts - before.hw_counts + per_tick / 2u) / per_tick);

        g_check_hw_drift = (int32_t)ticks - (int32_t)hw_ticks;
        g_check_soft_drift = (int32_t)ticks - (int32_t)(soft * SOFT_TIMER_TICKS);
        g_check_drift_ppm = hw_ticks != 0u ? (float)g_check_hw_drift * 1.0e6f / (float)hw_ticks : 0.0f;
        const int pass =
            within(g_check_hw_drift, g_check_tolerance) && within(g_check_soft_drift, SOFT_TOLERANCE);
        if (!pass || g_check_rounds % PRINT_EVERY_ROUNDS == 0u) {
            print_round(pass ? "PASS" : "FAIL", ticks, hw_ticks, soft);
        }
        configASSERT(pass);
        g_check_rounds++;
        before = now;
    }
}

void timing_start(void)
{
    TimerHandle_t t = xTimerCreate("Soft5", SOFT_TIMER_TICKS, pdTRUE, NULL, soft_timer_callback);
    if (t == NULL || xTimerStart(t, 0) != pdPASS) fw_fail("xTimerCreate", FW_EXIT_OOM);
    (void)xTaskCreateStatic(check_task, "Check", CHECK_STACK_WORDS, NULL, PRIO_CHECK, check_stack,
                            &check_tcb);
    board_timer_start(HW_TIMER_HZ);
}
