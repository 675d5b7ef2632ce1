/* semihost.c - the three semihosting calls the ITERATIONS builds need. */
#include "semihost.h"

#define SYS_WRITE0        0x04u
#define SYS_EXIT          0x18u
#define SYS_EXIT_EXTENDED 0x20u
#define ADP_Stopped_ApplicationExit 0x20026u

static uint32_t sh_call(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void sh_write0(const char *s)
{
    sh_call(SYS_WRITE0, s);
}

void sh_write_hex(uint32_t v)
{
    char buf[11] = "0x";
    for (int i = 0; i < 8; i++) {
        uint32_t d = (v >> (28 - 4 * i)) & 0xFu;
        buf[2 + i] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
    }
    buf[10] = '\0';
    sh_write0(buf);
}

void sh_write_dec(uint32_t v)
{
    char buf[12];
    int i = 11;
    buf[i] = '\0';
    do {
        buf[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0u);
    sh_write0(&buf[i]);
}

void sh_exit_ok(void)
{
    /* On AArch32 SYS_EXIT takes the reason itself in r1, not a block. */
    sh_call(SYS_EXIT, (const void *)ADP_Stopped_ApplicationExit);
    for (;;) {
    }
}

void sh_exit_fail(uint32_t code)
{
    /* ApplicationExit + subcode: QEMU exits with the subcode as status. */
    static uint32_t block[2];
    block[0] = ADP_Stopped_ApplicationExit;
    block[1] = code ? code : 1u;
    sh_call(SYS_EXIT_EXTENDED, block);
    for (;;) {
    }
}
