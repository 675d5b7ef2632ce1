/* semihost_open.c - a hostile test firmware: it prints a line, then asks the
 * debug host to create a file (SYS_OPEN mode "w" + SYS_WRITE), and exits with
 * status 0 when the host refused, 7 when the file was opened. memlife's tests
 * run it to prove a firmware cannot write the user's files. Self-contained:
 * its own vector table, no C library. */
#include <stdint.h>

#define SYS_OPEN   0x01u
#define SYS_WRITE  0x05u
#define SYS_WRITE0 0x04u
#define SYS_EXIT_EXTENDED 0x20u
#define ADP_Stopped_ApplicationExit 0x20026u
#define MODE_W 4u /* "w" in the semihosting mode table */

/* The path the test checks is absent afterwards. */
static const char k_path[] = "/tmp/memlife-semihost-probe.txt";

extern uint32_t _estack;

static uint32_t sh_call(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static void sh_exit(uint32_t code)
{
    static uint32_t block[2];
    block[0] = ADP_Stopped_ApplicationExit;
    block[1] = code;
    sh_call(SYS_EXIT_EXTENDED, block);
    for (;;) {
    }
}

__attribute__((noreturn)) void Reset_Handler(void)
{
    sh_call(SYS_WRITE0, "semihost_open: console works\n");
    static uint32_t open_args[3];
    open_args[0] = (uint32_t)(uintptr_t)k_path;
    open_args[1] = MODE_W;
    open_args[2] = sizeof k_path - 1u;
    uint32_t handle = sh_call(SYS_OPEN, open_args);
    if (handle != 0xFFFFFFFFu) {
        static const char data[] = "written by the firmware\n";
        static uint32_t write_args[3];
        write_args[0] = handle;
        write_args[1] = (uint32_t)(uintptr_t)data;
        write_args[2] = sizeof data - 1u;
        sh_call(SYS_WRITE, write_args);
        sh_exit(7u);
    }
    sh_exit(0u);
    for (;;) {
    }
}

static void Fault_Handler(void)
{
    sh_exit(9u);
}

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, 0, 0, 0, 0, Fault_Handler,
    Fault_Handler, 0, Fault_Handler, Fault_Handler,
};
