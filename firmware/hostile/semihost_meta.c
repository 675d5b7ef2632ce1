/* semihost_meta.c - a test firmware for memlife's --semihosting-dir beyond
 * open/read/write: SYS_FLEN (which QEMU forwards as a File-I/O `fstat`) and
 * SYS_RENAME (`rename`). Inside the directory both are served; renames that
 * would leave it, or that name a link the test plants, are refused. It exits
 * with a bit set for every expectation that failed:
 *   1 data.txt could not be written        2 SYS_FLEN did not give its length
 *   4 data.txt could not be renamed        8 renamed.txt does not hold the data
 *  16 a rename to "../" succeeded         32 a rename to an absolute path succeeded
 *  64 a rename into the linked folder "link/" succeeded
 * 128 the symbolic link "linkfile" was renamed
 * 256 the hard-linked file "hardfile" was renamed
 * 512 a rename over the hard-linked file "hardfile" succeeded
 * 1024 SYS_FLEN on a closed handle succeeded
 * Self-contained: its own vector table, no C library. */
#include <stdint.h>

#define SYS_OPEN   0x01u
#define SYS_CLOSE  0x02u
#define SYS_WRITE0 0x04u
#define SYS_WRITE  0x05u
#define SYS_READ   0x06u
#define SYS_FLEN   0x0Cu
#define SYS_RENAME 0x0Fu
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

/* 0 on success. */
static uint32_t sh_rename(const char *from, const char *to)
{
    uint32_t args[4] = {(uint32_t)(uintptr_t)from, length(from), (uint32_t)(uintptr_t)to,
                        length(to)};
    return sh_call(SYS_RENAME, args);
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

/* A rename that must be refused: its bit when it was not. */
static uint32_t must_refuse(const char *from, const char *to, uint32_t bit)
{
    return sh_rename(from, to) == 0u ? bit : 0u;
}

static const char k_data[] = "0123456789abcdefghij"; /* 20 bytes */

__attribute__((noreturn)) void Reset_Handler(void)
{
    uint32_t failed = 0;
    sh_call(SYS_WRITE0, "semihost_meta: console works\n");

    uint32_t h = sh_open("data.txt", MODE_W);
    if (h == FAILED || sh_rw(SYS_WRITE, h, k_data, sizeof k_data - 1u) != 0u) {
        failed |= 1u;
    }
    if (h != FAILED) {
        sh_call(SYS_CLOSE, &h);
    }

    h = sh_open("data.txt", MODE_R);
    uint32_t closed = h;
    if (h == FAILED || sh_call(SYS_FLEN, &h) != sizeof k_data - 1u) {
        failed |= 2u;
    }
    if (h != FAILED) {
        sh_call(SYS_CLOSE, &h);
        if (sh_call(SYS_FLEN, &closed) != FAILED) {
            failed |= 1024u;
        }
    }

    if (sh_rename("data.txt", "renamed.txt") != 0u) {
        failed |= 4u;
    }
    static char back[32];
    h = sh_open("renamed.txt", MODE_R);
    if (h == FAILED || sh_rw(SYS_READ, h, back, sizeof k_data - 1u) != 0u) {
        failed |= 8u;
    } else {
        for (uint32_t i = 0; i < sizeof k_data - 1u; i++) {
            if (back[i] != k_data[i]) {
                failed |= 8u;
            }
        }
    }
    if (h != FAILED) {
        sh_call(SYS_CLOSE, &h);
    }

    failed |= must_refuse("renamed.txt", "../escaped.txt", 16u);
    failed |= must_refuse("renamed.txt", "/tmp/memlife-semihost-meta-absolute.txt", 32u);
    failed |= must_refuse("renamed.txt", "link/escaped.txt", 64u);
    failed |= must_refuse("linkfile", "moved-link", 128u);
    failed |= must_refuse("hardfile", "moved-hard", 256u);
    failed |= must_refuse("renamed.txt", "hardfile", 512u);
    sh_exit(failed);
    for (;;) {
    }
}

static void Fault_Handler(void)
{
    sh_exit(0x8000u);
}

typedef void (*vector_t)(void);

__attribute__((section(".isr_vector"), used)) const vector_t g_vectors[16] = {
    (vector_t)(uintptr_t)&_estack, Reset_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, Fault_Handler, 0, 0, 0, 0, Fault_Handler,
    Fault_Handler, 0, Fault_Handler, Fault_Handler,
};
