/* semihost_dir.c - a test firmware for memlife's --semihosting-dir: it writes a
 * file by a relative path, reads it back (with a seek), removes a second one,
 * and tries to leave the directory (an absolute path, "..", and the names
 * "link/escape.txt" and "linkfile", where the test plants symbolic links that
 * point out). It exits with a bit set for every expectation that failed:
 *   1 the relative file could not be written    2 it read back wrong
 *   4 an absolute path was opened               8 a ".." path was opened
 *  16 a path through a linked folder was opened 32 a linked file was opened
 *  64 the second file could not be removed
 * Self-contained: its own vector table, no C library. */
#include <stdint.h>

#define SYS_OPEN   0x01u
#define SYS_CLOSE  0x02u
#define SYS_WRITE0 0x04u
#define SYS_WRITE  0x05u
#define SYS_READ   0x06u
#define SYS_SEEK   0x0Au
#define SYS_REMOVE 0x0Eu
#define SYS_EXIT_EXTENDED 0x20u
#define ADP_Stopped_ApplicationExit 0x20026u
#define MODE_R 0u /* "r" in the semihosting mode table */
#define MODE_W 4u /* "w" */
#define FAILED 0xFFFFFFFFu

extern uint32_t _estack;

static uint32_t sh_call(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

static uint32_t length(const char *s)
{
    uint32_t n = 0;
    while (s[n] != '\0') {
        n++;
    }
    return n;
}

static uint32_t sh_open(const char *path, uint32_t mode)
{
    uint32_t args[3] = {(uint32_t)(uintptr_t)path, mode, length(path)};
    return sh_call(SYS_OPEN, args);
}

/* Bytes NOT transferred, as semihosting counts. */
static uint32_t sh_rw(uint32_t op, uint32_t handle, const void *buf, uint32_t len)
{
    uint32_t args[3] = {handle, (uint32_t)(uintptr_t)buf, len};
    return sh_call(op, args);
}

static uint32_t sh_handle_op(uint32_t op, uint32_t handle, uint32_t arg)
{
    uint32_t args[2] = {handle, arg};
    return sh_call(op, args);
}

static uint32_t sh_remove(const char *path)
{
    uint32_t args[2] = {(uint32_t)(uintptr_t)path, length(path)};
    return sh_call(SYS_REMOVE, args);
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

/* Opens for writing; a refused open leaves its bit set, a granted one is closed. */
static uint32_t must_refuse(const char *path, uint32_t bit)
{
    uint32_t h = sh_open(path, MODE_W);
    if (h == FAILED) {
        return 0u;
    }
    sh_rw(SYS_WRITE, h, "escaped\n", 8u);
    sh_call(SYS_CLOSE, &h);
    return bit;
}

static const char k_content[] = "written by the firmware under the directory\n";

__attribute__((noreturn)) void Reset_Handler(void)
{
    uint32_t failed = 0;
    sh_call(SYS_WRITE0, "semihost_dir: console works\n");

    uint32_t h = sh_open("out.txt", MODE_W);
    if (h == FAILED || sh_rw(SYS_WRITE, h, k_content, sizeof k_content - 1u) != 0u) {
        failed |= 1u;
    }
    if (h != FAILED) {
        sh_call(SYS_CLOSE, &h);
    }

    static char back[64];
    h = sh_open("out.txt", MODE_R);
    /* Skip "written " (8 bytes) with a seek, then read the rest. */
    if (h == FAILED || sh_handle_op(SYS_SEEK, h, 8u) != 0u ||
        sh_rw(SYS_READ, h, back, sizeof k_content - 9u) != 0u) {
        failed |= 2u;
    } else {
        for (uint32_t i = 0; i < sizeof k_content - 9u; i++) {
            if (back[i] != k_content[8u + i]) {
                failed |= 2u;
            }
        }
    }
    if (h != FAILED) {
        sh_call(SYS_CLOSE, &h);
    }

    failed |= must_refuse("/tmp/memlife-semihost-dir-absolute.txt", 4u);
    failed |= must_refuse("../escape.txt", 8u);
    failed |= must_refuse("link/escape.txt", 16u);
    failed |= must_refuse("linkfile", 32u);

    h = sh_open("gone.txt", MODE_W);
    if (h == FAILED) {
        failed |= 64u;
    } else {
        sh_call(SYS_CLOSE, &h);
        if (sh_remove("gone.txt") != 0u) {
            failed |= 64u;
        }
    }
    sh_exit(failed);
    for (;;) {
    }
}

static void Fault_Handler(void)
{
    sh_exit(128u);
}

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, 0, 0, 0, 0, Fault_Handler,
    Fault_Handler, 0, Fault_Handler, Fault_Handler,
};
