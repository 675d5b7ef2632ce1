/* task_churn.c - tasks that come and go, and the Logger.
 *
 * Every SPAWN_PERIOD_MS the Spawner deletes the Sleeper it made last time (a task deleted
 * by another: the kernel frees its TCB and stack at once) and creates a new Worker and a new
 * Sleeper. A Worker allocates a scratch buffer, works on it, frees it and deletes itself: it
 * then waits on xTasksWaitingTermination, TCB and stack still allocated, until the idle task
 * runs and frees them (only when Infer and every other task block); while SPAWN_TASK_LIMIT tasks
 * exist the Spawner creates none. Names carry a running number ("Worker17", "Sleeper17") so
 * that a task list tells them apart.
 *
 * The Logger formats a status line into a heap buffer every LOG_PERIOD_MS and prints one in
 * LOG_PRINT_EVERY. task-leak's bug: the buffer is never freed, one block per loop. The assert
 * build's Logger holds its line count below ASSERT_LOG_LINES with configASSERT, which fails
 * at that line: the firmware parks in vAssertCalled, in task Logger. */
#include "app.h"

#include "mem.h"
#include "scenario.h"

#define SPAWN_PERIOD_MS    40
#define WORKER_SCRATCH_MIN 64u
/* No new tasks while this many exist: self-deleted Workers wait for the idle task, which runs
 * only in Infer's pauses, and would otherwise pile up (60 seen in one long lifecycle). */
#define SPAWN_TASK_LIMIT   24u
#define LOG_PERIOD_MS      500
#define LOG_PRINT_EVERY    10u
#define ASSERT_LOG_LINES   2u

volatile uint32_t g_tasks_created;
volatile uint32_t g_tasks_deleted;
volatile uint32_t g_log_lines;
uint32_t g_logger_leaked_bytes;

/* Tasks of different priorities count deletions: one read-modify-write at a time. */
static void count_deletion(void)
{
    taskENTER_CRITICAL();
    g_tasks_deleted++;
    taskEXIT_CRITICAL();
}

/* "Worker" + number: the name is copied into the TCB, so a local buffer will do. */
static void numbered_name(char *dst, const char *base, uint32_t n)
{
    size_t i = 0;
    while (base[i] != '\0' && i < configMAX_TASK_NAME_LEN - 3u) {
        dst[i] = base[i];
        i++;
    }
    dst[i++] = (char)('0' + (n / 10u) % 10u);
    dst[i++] = (char)('0' + n % 10u);
    dst[i] = '\0';
}

static void worker_task(void *arg)
{
    const uint32_t n = (uint32_t)(uintptr_t)arg;
    const uint32_t size = WORKER_SCRATCH_MIN + (n % 4u) * 32u;
    uint8_t *scratch = mem_alloc(size, "worker:scratch");
    uint32_t sum = 0;
    for (uint32_t i = 0; i < size; i++) {
        scratch[i] = (uint8_t)(i * n);
        sum += scratch[i];
    }
    (void)sum;
    mem_free(scratch);
    count_deletion();
    vTaskDelete(NULL); /* freed later, by the idle task */
}

static void sleeper_task(void *arg)
{
    (void)arg;
    for (;;) {
        (void)ulTaskNotifyTake(pdTRUE, portMAX_DELAY); /* nobody notifies: deleted while here */
    }
}

static void spawner_task(void *arg)
{
    (void)arg;
    TaskHandle_t sleeper = NULL;
    char name[configMAX_TASK_NAME_LEN];
    for (uint32_t n = 0;; n++) {
        vTaskDelay(pdMS_TO_TICKS(SPAWN_PERIOD_MS));
        if (sleeper != NULL) {
            vTaskDelete(sleeper);
            count_deletion();
            sleeper = NULL;
        }
        if (uxTaskGetNumberOfTasks() >= SPAWN_TASK_LIMIT) {
            continue; /* let the idle task catch up */
        }
        numbered_name(name, "Worker", n);
        (void)app_create_task(worker_task, name, WORKER_STACK_WORDS, PRIO_WORKER,
                              (void *)(uintptr_t)n);
        numbered_name(name, "Sleeper", n);
        sleeper = app_create_task(sleeper_task, name, WORKER_STACK_WORDS, PRIO_WORKER, NULL);
        g_tasks_created += 2u;
    }
}

static void logger_task(void *arg)
{
    (void)arg;
    TickType_t last = xTaskGetTickCount();
    for (;;) {
        vTaskDelayUntil(&last, pdMS_TO_TICKS(LOG_PERIOD_MS));
        line_t *l = mem_alloc(sizeof(line_t), "logger:line");
        line_start(l, "Logger: line ");
        line_dec(l, g_log_lines);
        line_str(l, ", free heap ");
        line_dec(l, mem_free_bytes());
        line_str(l, ", tasks ");
        line_dec(l, (uint32_t)uxTaskGetNumberOfTasks());
        if (g_log_lines % LOG_PRINT_EVERY == 0u) {
            line_send(l);
        }
        g_log_lines++;
        if (SCEN_ASSERT) {
            configASSERT(g_log_lines <= ASSERT_LOG_LINES);
        }
        if (SCEN_TASK_LEAK) {
            /* BUG (task-leak): the line was meant to be queued for a later upload; the upload
             * was removed, the free with it. */
            g_logger_leaked_bytes += sizeof(line_t);
        } else {
            mem_free(l);
        }
    }
}

void churn_start(void)
{
    (void)app_create_task(spawner_task, "Spawner", SPAWNER_STACK_WORDS, PRIO_SPAWNER, NULL);
    (void)app_create_task(logger_task, "Logger", LOGGER_STACK_WORDS, PRIO_LOGGER, NULL);
}
