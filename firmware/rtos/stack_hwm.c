/* stack_hwm.c - the hwm build's recorder: the firmware's own stack figures, for host tests to
 * compare with a debugger's.
 *
 * Every RECORD_PERIOD_MS StackMon stores, for every task the kernel knows (deleted ones
 * awaiting the idle task's clean-up included), its handle (the TCB address), its name and
 * uxTaskGetStackHighWaterMark (the words never used: 0xa5 fill counted from pxStack up), then
 * calls stack_hwm_recorded(), where a debugger breaks. The figures are taken with the
 * scheduler suspended and interrupts masked, so none of them can change before that call. */
#include "app.h"

#include "mem.h"

#define RECORD_PERIOD_MS    1000
#define STACK_HWM_MAX_TASKS 48 /* Workers awaiting the idle task pile up while Infer computes */

typedef struct {
    TaskHandle_t task;                     /* the TCB's address */
    char name[configMAX_TASK_NAME_LEN];
    uint32_t hwm_words;                    /* uxTaskGetStackHighWaterMark */
} stack_hwm_t;

stack_hwm_t g_stack_hwm[STACK_HWM_MAX_TASKS];
volatile uint32_t g_stack_hwm_count;
volatile uint32_t g_stack_hwm_rounds;

static TaskStatus_t status[STACK_HWM_MAX_TASKS];

/* A debugger's stop: g_stack_hwm holds g_stack_hwm_count fresh entries. */
__attribute__((noinline, used)) void stack_hwm_recorded(void)
{
    __asm__ volatile("" ::: "memory");
}

static void record(void)
{
    vTaskSuspendAll();
    const UBaseType_t n = uxTaskGetSystemState(status, STACK_HWM_MAX_TASKS, NULL);
    configASSERT(n > 0u); /* 0: more tasks than STACK_HWM_MAX_TASKS */
    taskENTER_CRITICAL();
    for (UBaseType_t i = 0; i < n; i++) {
        stack_hwm_t *r = &g_stack_hwm[i];
        r->task = status[i].xHandle;
        for (size_t c = 0; c < configMAX_TASK_NAME_LEN; c++) {
            r->name[c] = status[i].pcTaskName[c];
            if (r->name[c] == '\0') break;
        }
        r->hwm_words = (uint32_t)uxTaskGetStackHighWaterMark(status[i].xHandle);
    }
    g_stack_hwm_count = (uint32_t)n;
    g_stack_hwm_rounds++;
    stack_hwm_recorded();
    taskEXIT_CRITICAL();
    (void)xTaskResumeAll();
}

static void stackmon_task(void *arg)
{
    (void)arg;
    for (;;) {
        vTaskDelay(pdMS_TO_TICKS(RECORD_PERIOD_MS));
        record();
    }
}

void stack_hwm_start(void)
{
    (void)app_create_task(stackmon_task, "StackMon", STACKMON_STACK_WORDS, PRIO_STACKMON, NULL);
}
