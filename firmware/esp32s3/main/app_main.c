/* app_main.c - the demo firmware's lifecycle loop on an ESP32-S3 (ESP-IDF).
 *
 * The same phases in the same order as ../../src/main.c, so that memlife's
 * phase breakpoints (model_load, graph_build, inference_run, model_switch,
 * model_release, op_init, op_invoke) work unchanged: load the wake-word
 * model, build, infer, switch to the command-word model, infer, release.
 * Allocations go to ESP-IDF's heap through mem.c (ALLOC_ESPIDF). Between
 * lifecycles the task sleeps, so the idle task and the console run. */
#include <inttypes.h>
#include <stdio.h>

#include "freertos/FreeRTOS.h"
#include "freertos/task.h"

/* Relative paths on purpose: ../../src is not an include directory (see
 * CMakeLists.txt). */
#include "../../src/engine.h"
#include "../../src/mem.h"
#include "../../src/scenario.h"

/* Current iteration (0-based), as in main.c; memlife scripts may read it. */
uint32_t g_iteration;

void app_main(void)
{
    uint32_t crc_a0 = 0, crc_b0 = 0;

    mem_init();
    printf("memlife_kws: scenario %s, heap_caps free %" PRIu32 " bytes (MALLOC_CAP_8BIT)\n",
           SCENARIO_NAME, mem_free_bytes());
    for (uint32_t it = 0;; it++) {
        g_iteration = it;
        if (model_load(&g_engine, &g_model_wake) != 0) fw_fail("model_load", FW_EXIT_ENGINE);
        if (graph_build(&g_engine) != 0) fw_fail("graph_build", FW_EXIT_ENGINE);
        if (inference_run(&g_engine) != 0) fw_fail("inference_run (A)", FW_EXIT_ENGINE);
        uint32_t crc_a = g_engine.output_crc;
        if (model_switch(&g_engine, &g_model_cmd) != 0) fw_fail("model_switch", FW_EXIT_ENGINE);
        if (inference_run(&g_engine) != 0) fw_fail("inference_run (B)", FW_EXIT_ENGINE);
        uint32_t crc_b = g_engine.output_crc;
        if (model_release(&g_engine) != 0) fw_fail("model_release", FW_EXIT_ENGINE);

        /* Same input, same weights: any difference is memory corruption. */
        if (it == 0) {
            crc_a0 = crc_a;
            crc_b0 = crc_b;
        } else if (crc_a != crc_a0 || crc_b != crc_b0) {
            printf("memlife_kws: iteration %" PRIu32 ": output CRC changed\n", it);
            fw_fail("wrong inference output", FW_EXIT_OUTPUT);
        }
        printf("memlife_kws: iteration %" PRIu32 " ok, crc 0x%08" PRIx32 "/0x%08" PRIx32
               ", free after release %" PRIu32 "\n",
               it, crc_a, crc_b, mem_free_bytes());
        vTaskDelay(pdMS_TO_TICKS(100));
    }
}
