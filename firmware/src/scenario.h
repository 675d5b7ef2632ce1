/* scenario.h - the build variant, one flag per seed case (chapter 4).
 * Exactly one SCENARIO_xxx is defined on the command line; the rest of the
 * code asks the SCEN_* questions below instead of testing names, so that the
 * difference between two ELFs is only the case. */
#ifndef SCENARIO_H
#define SCENARIO_H

#if defined(SCENARIO_HEALTHY)
#define SCENARIO_NAME "healthy"
#elif defined(SCENARIO_LOAD_PEAK)
#define SCENARIO_NAME "load-peak"
#elif defined(SCENARIO_REORDER)
#define SCENARIO_NAME "reorder"
#elif defined(SCENARIO_BRANCH_PEAK)
#define SCENARIO_NAME "branch-peak"
#elif defined(SCENARIO_LEAK_ON_SWITCH)
#define SCENARIO_NAME "leak-on-switch"
#elif defined(SCENARIO_FRAGMENTATION)
#define SCENARIO_NAME "fragmentation"
#elif defined(SCENARIO_OVERLAP)
#define SCENARIO_NAME "overlap"
#elif defined(SCENARIO_OVERRUN)
#define SCENARIO_NAME "overrun"
#elif defined(SCENARIO_ERROR_PATH)
#define SCENARIO_NAME "error-path"
#elif defined(SCENARIO_DEFERRED_RELEASE)
#define SCENARIO_NAME "deferred-release"
/* The RTOS firmware's own scenarios (rtos/, FreeRTOS tasks around the same engine). */
#elif defined(SCENARIO_TASK_LEAK)
#define SCENARIO_NAME "task-leak"
#elif defined(SCENARIO_STACK_DEEP)
#define SCENARIO_NAME "stack-deep"
#elif defined(SCENARIO_HWM)
#define SCENARIO_NAME "hwm"
#elif defined(SCENARIO_ASSERT)
#define SCENARIO_NAME "assert"
#elif defined(SCENARIO_NO_ML)
#define SCENARIO_NAME "no-ml"
#else
#error "define one SCENARIO_xxx"
#endif

/* The case flags (0/1), so that code can use plain if (SCEN_x).
 * SCEN_COMPRESSED_MODEL 4.1: model compressed in flash; load holds file + inflate + weights.
 * SCEN_NHWC_CONV_B      4.2: conv_b ships NHWC, its op_init re-lays it out into an NCHW copy.
 * SCEN_BRANCH_BUFFERS   4.3: head branches each malloc their output, all kept until det_post.
 * SCEN_BAD_SHARE_HINT   4.3 risk: a manual hint shares head_p4_out with head_p3_out
 *                       although det_post still reads head_p3_out.
 * SCEN_DEFERRED_DECODE  head outputs decoded in det_post (all live) instead of at once.
 * SCEN_LEAK_ON_SWITCH   4.4: model_switch's teardown returns early, skips free(op_contexts).
 * SCEN_FRAGMENTATION    4.4: long-lived records interleaved with per-layer weight blocks.
 * SCEN_OVERRUN          det_post writes its 16-byte result into its own 13-byte heap
 *                       buffer: 3 bytes past the request, inside the allocator's
 *                       padding (harmless here), onto the tail canary when poisoned.
 * SCEN_ERROR_PATH       graph_build's clean-up after a failed arena allocation forgets
 *                       op_contexts (every other path, and every other build, frees it).
 *                       No allocation fails by itself: a debugger makes one fail.
 * SCEN_DEFERRED_RELEASE model_release keeps a 64-byte summary of the cycle that the next
 *                       cycle's model_load frees: a late free, not a leak.
 * RTOS firmware only (rtos/):
 * SCEN_TASK_LEAK        the Logger task forgets to free its line buffer: one block per loop.
 * SCEN_STACK_DEEP       conv_b stages its weights on the inference task's stack, whose size
 *                       leaves a few words to spare at that layer.
 * SCEN_STACK_HWM        healthy, plus a task that stores every task's
 *                       uxTaskGetStackHighWaterMark in g_stack_hwm (the test build).
 * SCEN_ASSERT           the Logger's configASSERT on its line count fails at its third
 *                       line: vAssertCalled(__FILE__, __LINE__) parks the firmware.
 * SCEN_NO_ML            the tasks without the inference task, and a trace hook on every task
 *                       switch: an RTOS firmware with no ML lifecycle, as FreeRTOS's demos are
 *                       (what `memlife init` must say it cannot find). */
#define SCEN_COMPRESSED_MODEL 0
#define SCEN_NHWC_CONV_B      0
#define SCEN_BRANCH_BUFFERS   0
#define SCEN_BAD_SHARE_HINT   0
#define SCEN_LEAK_ON_SWITCH   0
#define SCEN_FRAGMENTATION    0
#define SCEN_OVERRUN          0
#define SCEN_ERROR_PATH       0
#define SCEN_DEFERRED_RELEASE 0
#define SCEN_TASK_LEAK        0
#define SCEN_STACK_DEEP       0
#define SCEN_STACK_HWM        0
#define SCEN_ASSERT           0
#define SCEN_NO_ML            0
#if defined(SCENARIO_LOAD_PEAK)
#undef SCEN_COMPRESSED_MODEL
#define SCEN_COMPRESSED_MODEL 1
#elif defined(SCENARIO_REORDER)
#undef SCEN_NHWC_CONV_B
#define SCEN_NHWC_CONV_B 1
#elif defined(SCENARIO_BRANCH_PEAK)
#undef SCEN_BRANCH_BUFFERS
#define SCEN_BRANCH_BUFFERS 1
#elif defined(SCENARIO_OVERLAP)
#undef SCEN_BAD_SHARE_HINT
#define SCEN_BAD_SHARE_HINT 1
#elif defined(SCENARIO_LEAK_ON_SWITCH)
#undef SCEN_LEAK_ON_SWITCH
#define SCEN_LEAK_ON_SWITCH 1
#elif defined(SCENARIO_FRAGMENTATION)
#undef SCEN_FRAGMENTATION
#define SCEN_FRAGMENTATION 1
#elif defined(SCENARIO_OVERRUN)
#undef SCEN_OVERRUN
#define SCEN_OVERRUN 1
#elif defined(SCENARIO_ERROR_PATH)
#undef SCEN_ERROR_PATH
#define SCEN_ERROR_PATH 1
#elif defined(SCENARIO_DEFERRED_RELEASE)
#undef SCEN_DEFERRED_RELEASE
#define SCEN_DEFERRED_RELEASE 1
#elif defined(SCENARIO_TASK_LEAK)
#undef SCEN_TASK_LEAK
#define SCEN_TASK_LEAK 1
#elif defined(SCENARIO_STACK_DEEP)
#undef SCEN_STACK_DEEP
#define SCEN_STACK_DEEP 1
#elif defined(SCENARIO_HWM)
#undef SCEN_STACK_HWM
#define SCEN_STACK_HWM 1
#elif defined(SCENARIO_ASSERT)
#undef SCEN_ASSERT
#define SCEN_ASSERT 1
#elif defined(SCENARIO_NO_ML)
#undef SCEN_NO_ML
#define SCEN_NO_ML 1
#endif
#define SCEN_DEFERRED_DECODE (SCEN_BRANCH_BUFFERS || SCEN_BAD_SHARE_HINT)

#if defined(ALLOC_HEAP4) && defined(HEAP5_REGIONS) && configENABLE_HEAP_PROTECTOR
#define ALLOC_NAME "heap5p"
#elif defined(ALLOC_HEAP4) && defined(HEAP5_REGIONS)
#define ALLOC_NAME "heap5"
#elif defined(ALLOC_HEAP4) && defined(configENABLE_HEAP_PROTECTOR) && configENABLE_HEAP_PROTECTOR
#define ALLOC_NAME "heap4p"
#elif defined(ALLOC_HEAP4)
#define ALLOC_NAME "heap4"
#elif defined(ALLOC_NANO) && defined(ALLOC_DLMALLOC)
#define ALLOC_NAME "dl"
#elif defined(ALLOC_NANO)
#define ALLOC_NAME "nano"
#elif defined(ALLOC_TLSF) && defined(CONFIG_HEAP_POISONING_COMPREHENSIVE)
#define ALLOC_NAME "tlsfpc"
#elif defined(ALLOC_TLSF) && defined(CONFIG_HEAP_POISONING_LIGHT)
#define ALLOC_NAME "tlsfp"
#elif defined(ALLOC_TLSF) && defined(TLSF_FIXED_CONTROL)
#define ALLOC_NAME "tlsf_fixed"
#elif defined(ALLOC_TLSF)
#define ALLOC_NAME "tlsf"
#elif defined(ALLOC_ESPIDF)
#define ALLOC_NAME "espidf"
#else
#error "define ALLOC_HEAP4, ALLOC_NANO, ALLOC_TLSF or ALLOC_ESPIDF"
#endif

#endif
