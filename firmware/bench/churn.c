/* churn.c - the allocation-heavy workload of memlife's tracing benchmark
 * (docs/BENCHMARKS.md). The inference firmware spends most of its time
 * computing between allocations, which would measure QEMU rather than the
 * debugger; this loop does little but allocate and free, so the events per
 * second it reaches under a tracer measure the tracer.
 *
 * Built like a scenario (SCENARIO_HEALTHY for mem.c's messages), with the
 * same allocators: build/<alloc>-churn.elf. Each churn_round() makes 32
 * random slot flips: a full slot is freed, an empty one gets 16..527 bytes. */
#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "semihost.h"

#define SLOTS 32

static void *slots[SLOTS];
static uint32_t rng_state = 0x12345678u;
uint32_t g_iteration;
volatile uint32_t g_churn_events;

static uint32_t rng(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

__attribute__((noinline, used)) void churn_round(void)
{
    for (int i = 0; i < SLOTS; i++) {
        uint32_t k = rng() % SLOTS;
        if (slots[k] != NULL) {
            mem_free(slots[k]);
            slots[k] = NULL;
        } else {
            slots[k] = mem_alloc(16u + rng() % 512u, "churn");
        }
        g_churn_events++;
    }
}

int main(void)
{
    mem_init();
    for (g_iteration = 0;; g_iteration++) {
#ifdef ITERATIONS
        if (g_iteration == ITERATIONS) {
            sh_write0("churn: done\n");
            sh_exit_ok();
        }
#endif
        churn_round();
    }
}
