/* main.c - the device loop: per iteration one full lifecycle of the wake-word
 * model, a switch to the command-word model, and release.
 *
 * Without ITERATIONS it loops forever and makes no semihosting calls (a
 * debugger observes it). With ITERATIONS=N it runs N lifecycles, checks the
 * outputs and the heap, prints one line and exits through semihosting. */
#include "engine.h"
#include "firmware_view.h"
#include "mem.h"
#include "scenario.h"
#include "semihost.h"

/* Free bytes after each release; read by a debugger too. */
uint32_t g_free_after_release[4];
/* Current iteration (0-based); fw_fail reports it. */
uint32_t g_iteration;

#ifdef ITERATIONS
static void fail_heap(const char *why, uint32_t value)
{
    sh_write0("free bytes after release: ");
    sh_write_dec(value);
    sh_write0("\n");
    fw_fail(why, FW_EXIT_HEAP);
}
#endif

int main(void)
{
    uint32_t crc_a0 = 0, crc_b0 = 0;
    int have_crc = 0;

    mem_init();
#ifdef ITERATIONS
    /* heap4 initialises lazily: one malloc/free so the baseline is real. */
    mem_free(mem_alloc(8, "main:init"));
    const uint32_t free_start = mem_free_bytes();
    uint32_t leak_step = 0, prev_free = free_start;
#endif

#ifdef ITERATIONS
    for (uint32_t it = 0; it < (uint32_t)(ITERATIONS); it++) {
#else
    for (uint32_t it = 0;; it++) {
#endif
        g_iteration = it;
        int load_rc = model_load(&g_engine, &g_model_wake);
        if (load_rc == LOAD_ENOMEM) {
            /* An allocation of the load failed (only a debugger makes one fail):
             * the loader gave back what it took; go on with the next cycle. */
            continue;
        }
        if (load_rc != 0) fw_fail("model_load", FW_EXIT_ENGINE);
        if (graph_build(&g_engine) != 0) {
            /* Only a failed allocation gets here (none fails by itself: a
             * debugger makes one fail): give the model back, skip this
             * cycle's inferences and go on with the next cycle. */
#ifndef ALLOC_ESPIDF
            firmware_view_capture();
#endif
            if (model_release(&g_engine) != 0) fw_fail("model_release", FW_EXIT_ENGINE);
            continue;
        }
        if (inference_run(&g_engine) != 0) fw_fail("inference_run (A)", FW_EXIT_ENGINE);
        uint32_t crc_a = g_engine.output_crc;
        if (model_switch(&g_engine, &g_model_cmd) != 0) fw_fail("model_switch", FW_EXIT_ENGINE);
        if (inference_run(&g_engine) != 0) fw_fail("inference_run (B)", FW_EXIT_ENGINE);
        uint32_t crc_b = g_engine.output_crc;
        /* The allocator's own figures, right before the call (nothing
         * allocates in between): see firmware_view.h. */
#ifndef ALLOC_ESPIDF
        firmware_view_capture();
#endif
#if defined(ITERATIONS) && !defined(ALLOC_ESPIDF)
        {
            const char *why = firmware_view_inconsistency();
            if (g_firmware_view.captures != it + 1u) why = "view captures != iteration";
            if (why != NULL) fw_fail(why, FW_EXIT_HEAP);
        }
#endif
        if (model_release(&g_engine) != 0) fw_fail("model_release", FW_EXIT_ENGINE);

        /* Same input, same weights: any difference is memory corruption. */
        if (!have_crc) {
            have_crc = 1;
            crc_a0 = crc_a;
            crc_b0 = crc_b;
            if (crc_a == crc_b) fw_fail("models give identical output", FW_EXIT_OUTPUT);
        } else if (crc_a != crc_a0 || crc_b != crc_b0) {
            fw_fail("wrong inference output (CRC differs from iteration 1)", FW_EXIT_OUTPUT);
        }

#ifdef ITERATIONS
        uint32_t f = mem_free_bytes();
        if (it < 4) g_free_after_release[it] = f;
        if (SCEN_LEAK_ON_SWITCH) {
            /* The bug must show as the same drop on every switch. */
            uint32_t step = prev_free > f ? prev_free - f : 0u;
            if (step == 0u || (it > 0 && step != leak_step))
                fail_heap("leak is not constant per switch", step);
            leak_step = step;
        } else if (SCEN_FRAGMENTATION || SCEN_DEFERRED_RELEASE) {
            if (it > 0 && f != g_free_after_release[0])
                fail_heap("free after release not constant", f);
        } else if (f != free_start) {
            fail_heap("heap not back to baseline after model_release", f);
        }
        prev_free = f;
#endif
    }

#ifdef ITERATIONS
    sh_write0(SCENARIO_NAME "/" ALLOC_NAME ": ");
    sh_write_dec((uint32_t)(ITERATIONS));
    sh_write0(" lifecycles ok, output crc ");
    sh_write_hex(crc_a0);
    sh_write0("/");
    sh_write_hex(crc_b0);
    sh_write0(", free after release ");
    sh_write_dec(mem_free_bytes());
    if (SCEN_LEAK_ON_SWITCH) {
        sh_write0(" (leak per switch ");
        sh_write_dec(leak_step);
        sh_write0(")");
    }
    sh_write0("\n");
    sh_exit_ok();
#endif
}
