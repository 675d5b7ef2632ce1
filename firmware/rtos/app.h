/* app.h - the RTOS firmware's tasks: priorities, stack sizes, and what the tasks' files share
 * (the serial line builder, the exit report of the ITERATIONS builds).
 *
 *   task       prio  what                                             file
 *   Infer        1   the engine's lifecycle, then a 20 ms pause       task_infer.c
 *   Worker       1   spawned: allocate, work, free, then delete self  task_churn.c
 *   Sleeper      1   spawned: blocks until the Spawner deletes it     task_churn.c
 *   Spawner      3   creates a Worker and a Sleeper every 40 ms       task_churn.c
 *   Logger       2   a heap line buffer every 500 ms (task-leak:      task_churn.c
 *                    never freed)
 *   Producer     2   a heap message into the queue every 20 ms        task_queue.c
 *   Consumer     3   takes, checks and frees each message             task_queue.c
 *   Check        4   the timing self-check (static TCB and stack)     timing.c
 *   StackMon     4   hwm build only: records uxTaskGetStackHighWaterMark stack_hwm.c
 *   Tmr Svc      5   the kernel's timer task (static)
 *   IDLE         0   the kernel's idle task (static): frees self-deleted tasks */
#ifndef APP_H
#define APP_H

#include <stddef.h>
#include <stdint.h>

#include "FreeRTOS.h"
#include "task.h"

#define PRIO_INFER    1
#define PRIO_WORKER   1
#define PRIO_LOGGER   2
#define PRIO_PRODUCER 2
#define PRIO_SPAWNER  3
#define PRIO_CONSUMER 3
#define PRIO_CHECK    4
#define PRIO_STACKMON 4

/* Stack depths in words (StackType_t). The inference task's is the one stack-deep tunes: it
 * leaves a few words at conv_b's staged op (per board: the Cortex-M4F's hard-float code and
 * frames differ), firmware/README.md "RTOS firmware". */
#ifndef INFER_STACK_WORDS
#define INFER_STACK_WORDS 1024
#endif
#define SPAWNER_STACK_WORDS  256
#define WORKER_STACK_WORDS   160
#define LOGGER_STACK_WORDS   256
#define QUEUE_STACK_WORDS    192
#define CHECK_STACK_WORDS    256
#define STACKMON_STACK_WORDS 256

/* One serial line, built in a task's own buffer and written in one piece, so that lines of
 * different tasks never interleave. */
typedef struct {
    char text[96];
    size_t len;
} line_t;
void line_start(line_t *l, const char *who);
void line_str(line_t *l, const char *s);
void line_dec(line_t *l, uint32_t v);
void line_signed(line_t *l, int32_t v);
/* Appends "\r\n"; returns the text. */
const char *line_end(line_t *l);
/* line_end, then writes the line inside a critical section: for tasks only (not for interrupt
 * handlers, kernel hooks, or with interrupts already disabled: board_serial_write(line_end())). */
void line_send(line_t *l);

/* Create a task from the heap; a failure is fatal (fw_fail). */
TaskHandle_t app_create_task(TaskFunction_t fn, const char *name, uint32_t stack_words,
                             UBaseType_t prio, void *arg);

/* The tasks' start-up (called from main before the scheduler runs). */
void infer_start(void);
void churn_start(void);
void queue_start(void);
void timing_start(void);
void stack_hwm_start(void);

/* Figures the exit report and a debugger read. */
extern volatile uint32_t g_check_rounds;     /* timing self-check rounds passed */
extern volatile uint32_t g_tasks_created;    /* Workers and Sleepers */
extern volatile uint32_t g_tasks_deleted;    /* by themselves or by the Spawner */
extern volatile uint32_t g_messages_consumed;
extern volatile uint32_t g_log_lines;
extern uint32_t g_logger_leaked_bytes;       /* task-leak: requested bytes never freed */

#endif
