/* app.c - the RTOS firmware's main and the hooks the kernel calls: start-up (every task
 * created from main, then the scheduler), configASSERT's vAssertCalled, the stack overflow
 * hook, and the serial line builder the tasks print with.
 *
 * Without ITERATIONS the firmware runs forever and makes no semihosting call; with
 * ITERATIONS=N the inference task reports after N lifecycles and exits (task_infer.c). */
#include "app.h"

#include "board.h"
#include "mem.h"
#include "scenario.h"
#include "semihost.h"

/* Where configASSERT fired, for a debugger that stops in vAssertCalled or finds the firmware
 * parked there; a debugger sets g_assert_continue to non-zero to let it go on. */
const char *volatile g_assert_file;
volatile uint32_t g_assert_line;
volatile uint32_t g_assert_continue;

/* Written straight to the port: a critical section's exit would turn interrupts back on. */
static void write_assert_line(const char *file, uint32_t line)
{
    line_t l;
    line_start(&l, "ASSERT! Line ");
    line_dec(&l, line);
    line_str(&l, ", file ");
    line_str(&l, file);
    board_serial_write(line_end(&l));
}

/* What configASSERT calls (FreeRTOSConfig.h): interrupts off, the place on the serial port,
 * then (ITERATIONS) a failing exit or (looping) a park a debugger can break into. */
__attribute__((noinline, used)) void vAssertCalled(const char *pcFile, unsigned long ulLine)
{
    taskDISABLE_INTERRUPTS();
    g_assert_file = pcFile;
    g_assert_line = (uint32_t)ulLine;
    write_assert_line(pcFile, (uint32_t)ulLine);
#ifdef ITERATIONS
    sh_write0("ASSERT! ");
    sh_write0(pcFile);
    sh_write0(" line ");
    sh_write_dec((uint32_t)ulLine);
    sh_write0("\n");
    fw_fail("configASSERT", FW_EXIT_ASSERT);
#else
    while (g_assert_continue == 0u) {
        __asm__ volatile("" ::: "memory");
    }
    g_assert_continue = 0u;
    taskENABLE_INTERRUPTS();
#endif
}

/* configCHECK_FOR_STACK_OVERFLOW 2: the kernel found the task's last 16 stack bytes changed
 * (or its saved stack pointer below the stack) when switching it out. Runs inside the context
 * switch (PendSV), so no critical section here. */
void vApplicationStackOverflowHook(TaskHandle_t xTask, char *pcTaskName)
{
    (void)xTask;
    line_t l;
    line_start(&l, "stack overflow in task ");
    line_str(&l, pcTaskName);
    board_serial_write(line_end(&l));
    vAssertCalled(__FILE__, __LINE__);
}

#if SCEN_NO_ML
/* Task switches so far: the no-ml build's trace hook (FreeRTOSConfig.h) counts them. */
volatile uint32_t g_task_switches;

void xTraceTaskSwitch(void)
{
    g_task_switches++;
}
#endif

void line_start(line_t *l, const char *who)
{
    l->len = 0;
    line_str(l, who);
}

void line_str(line_t *l, const char *s)
{
    /* Two bytes stay free for line_end's "\r\n". */
    while (*s != '\0' && l->len + 3u < sizeof(l->text)) {
        l->text[l->len++] = *s++;
    }
    l->text[l->len] = '\0';
}

void line_dec(line_t *l, uint32_t v)
{
    char digits[11];
    int i = 10;
    digits[i] = '\0';
    do {
        digits[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    line_str(l, &digits[i]);
}

void line_signed(line_t *l, int32_t v)
{
    if (v < 0) {
        line_str(l, "-");
        line_dec(l, (uint32_t)0u - (uint32_t)v);
    } else {
        line_str(l, "+");
        line_dec(l, (uint32_t)v);
    }
}

const char *line_end(line_t *l)
{
    l->text[l->len++] = '\r';
    l->text[l->len++] = '\n';
    l->text[l->len] = '\0';
    return l->text;
}

void line_send(line_t *l)
{
    /* A critical section keeps the line whole; before the scheduler runs there is nothing to
     * keep out. */
    const int guard = xTaskGetSchedulerState() == taskSCHEDULER_RUNNING;
    const char *text = line_end(l);
    if (guard) taskENTER_CRITICAL();
    board_serial_write(text);
    if (guard) taskEXIT_CRITICAL();
}

TaskHandle_t app_create_task(TaskFunction_t fn, const char *name, uint32_t stack_words,
                             UBaseType_t prio, void *arg)
{
    TaskHandle_t h = NULL;
    if (xTaskCreate(fn, name, (configSTACK_DEPTH_TYPE)stack_words, arg, prio, &h) != pdPASS) {
        fw_fail("xTaskCreate: out of heap", FW_EXIT_OOM);
    }
    return h;
}

int main(void)
{
    line_t l;

    board_init();
    line_start(&l, "memlife RTOS firmware: ");
    line_str(&l, board_name);
    line_str(&l, ", scenario " SCENARIO_NAME ", FreeRTOS " tskKERNEL_VERSION_NUMBER);
    line_send(&l);

    mem_init();
    timing_start();
    if (!SCEN_NO_ML) {
        infer_start();
    }
    queue_start();
    churn_start();
    if (SCEN_STACK_HWM) {
        stack_hwm_start();
    }
    vTaskStartScheduler();
    fw_fail("vTaskStartScheduler returned", FW_EXIT_ENGINE);
}
