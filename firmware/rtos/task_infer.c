/* task_infer.c - the inference task: the engine's lifecycle (model_load, graph_build,
 * inference_run, model_switch, inference_run, model_release), as the bare-metal main.c runs
 * it, inside a FreeRTOS task that pauses 20 ms between cycles. Every engine allocation is
 * this task's. With ITERATIONS=N it reports after N cycles and exits through semihosting. */
#include "app.h"

#include "engine.h"
#include "mem.h"
#include "scenario.h"
#include "semihost.h"

#define INFER_PAUSE_MS 20

/* Current lifecycle (0-based); fw_fail reports it. */
uint32_t g_iteration;
/* Lifecycles completed; read by a debugger too. */
volatile uint32_t g_infer_cycles;

static uint32_t crc_a0, crc_b0;

/* One lifecycle. A failed allocation (only a debugger makes one fail) skips the rest of the
 * cycle after giving back what the cycle holds, as main.c does. */
static void infer_cycle(void)
{
    int rc = model_load(&g_engine, &g_model_wake);
    if (rc == LOAD_ENOMEM) return;
    if (rc != 0) fw_fail("model_load", FW_EXIT_ENGINE);
    if (graph_build(&g_engine) != 0) {
        if (model_release(&g_engine) != 0) fw_fail("model_release", FW_EXIT_ENGINE);
        return;
    }
    if (inference_run(&g_engine) != 0) fw_fail("inference_run (A)", FW_EXIT_ENGINE);
    const uint32_t crc_a = g_engine.output_crc;
    if (model_switch(&g_engine, &g_model_cmd) != 0) fw_fail("model_switch", FW_EXIT_ENGINE);
    if (inference_run(&g_engine) != 0) fw_fail("inference_run (B)", FW_EXIT_ENGINE);
    const uint32_t crc_b = g_engine.output_crc;
    if (model_release(&g_engine) != 0) fw_fail("model_release", FW_EXIT_ENGINE);

    /* Same input, same weights: any difference is memory corruption (another task's, too). */
    if (g_infer_cycles == 0u) {
        crc_a0 = crc_a;
        crc_b0 = crc_b;
        if (crc_a == crc_b) fw_fail("models give identical output", FW_EXIT_OUTPUT);
    } else if (crc_a != crc_a0 || crc_b != crc_b0) {
        fw_fail("wrong inference output (CRC differs from cycle 1)", FW_EXIT_OUTPUT);
    }
    g_infer_cycles++;
}

#ifdef ITERATIONS
/* The exit report: waits (at most 5 s) until the timing self-check has passed twice, so that
 * qemu-check covers it too, then stops the other tasks and exits. */
static void infer_report_and_exit(void)
{
    for (int i = 0; i < 50 && g_check_rounds < 2u; i++) vTaskDelay(pdMS_TO_TICKS(100));
    if (g_check_rounds < 2u) fw_fail("timing self-check never ran", FW_EXIT_ENGINE);
    vTaskSuspendAll();
    sh_write0("rtos " SCENARIO_NAME ": ");
    sh_write_dec(g_infer_cycles);
    sh_write0(" lifecycles ok, output crc ");
    sh_write_hex(crc_a0);
    sh_write0("/");
    sh_write_hex(crc_b0);
    sh_write0(", self-check rounds ");
    sh_write_dec(g_check_rounds);
    sh_write0(", tasks created/deleted ");
    sh_write_dec(g_tasks_created);
    sh_write0("/");
    sh_write_dec(g_tasks_deleted);
    sh_write0(", messages ");
    sh_write_dec(g_messages_consumed);
    sh_write0(", infer stack left ");
    sh_write_dec((uint32_t)uxTaskGetStackHighWaterMark(NULL));
    sh_write0(" words");
    if (SCEN_TASK_LEAK) {
        sh_write0(", Logger leaked ");
        sh_write_dec(g_logger_leaked_bytes);
        sh_write0(" bytes in ");
        sh_write_dec(g_log_lines);
        sh_write0(" lines");
    }
    sh_write0("\n");
    sh_exit_ok();
}
#endif

static void infer_task(void *arg)
{
    (void)arg;
#ifdef ITERATIONS
    for (uint32_t it = 0; it < (uint32_t)(ITERATIONS); it++) {
#else
    for (uint32_t it = 0;; it++) {
#endif
        g_iteration = it;
        infer_cycle();
        vTaskDelay(pdMS_TO_TICKS(INFER_PAUSE_MS));
    }
#ifdef ITERATIONS
    infer_report_and_exit();
#endif
}

void infer_start(void)
{
    (void)app_create_task(infer_task, "Infer", INFER_STACK_WORDS, PRIO_INFER, NULL);
}
