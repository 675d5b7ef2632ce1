/* semihost.h - ARM semihosting, used only in ITERATIONS builds (a looping
 * device build makes no semihosting calls: on a board without a debugger a
 * BKPT would fault). */
#ifndef SEMIHOST_H
#define SEMIHOST_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" { /* also linked into the C++ firmware (firmware/cpp) */
#endif

void sh_write0(const char *s);
void sh_write_hex(uint32_t v);
void sh_write_dec(uint32_t v);
__attribute__((noreturn)) void sh_exit_ok(void);
/* Exit with a nonzero QEMU status (SYS_EXIT_EXTENDED subcode). */
__attribute__((noreturn)) void sh_exit_fail(uint32_t code);

#ifdef __cplusplus
}
#endif
#endif
