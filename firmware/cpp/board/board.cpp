// board.cpp - board.h, and the three newlib system calls abort() needs.
//
// cpp/: operator new (libstdc++'s, GCC 12, built for newlib-nano without
// exceptions) calls malloc; on NULL it calls the new_handler if one is set
// and retries, else abort(): raise(SIGABRT) -> _kill, then _exit(1). main()
// installs OutOfMemory as the handler, so an allocation failure is reported
// as such; _kill and _exit catch every other abort() (tflm/: TFLM's
// TFLITE_DCHECK). tflm/ has its own operator new, which calls OutOfMemory.
#include "board/board.h"

#include "semihost.h"

namespace board {

__attribute__((noinline, used)) void Halt()
{
    for (;;) {
        __asm__ volatile("" ::: "memory");
    }
}

void Print(const char* text)
{
#ifdef ITERATIONS
    sh_write0(text);
#else
    (void)text;
#endif
}

void PrintDec(uint32_t value)
{
#ifdef ITERATIONS
    sh_write_dec(value);
#else
    (void)value;
#endif
}

void PrintHex(uint32_t value)
{
#ifdef ITERATIONS
    sh_write_hex(value);
#else
    (void)value;
#endif
}

__attribute__((noinline)) void Fail(const char* why, uint32_t code)
{
#ifdef ITERATIONS
    sh_write0("FAILED " CPP_VARIANT_NAME ": ");
    sh_write0(why);
    sh_write0("\n");
    sh_exit_fail(code);
#else
    (void)why;
    (void)code;
    Halt();
#endif
}

void ExitOk()
{
#ifdef ITERATIONS
    sh_exit_ok();
#else
    Halt();
#endif
}

__attribute__((noinline, used)) void OutOfMemory()
{
    Fail("out of memory (operator new)", kExitOutOfMemory);
}

}  // namespace board

extern "C" {

// abort() ends here (SIGABRT): nothing in this firmware raises signals.
int _kill(int pid, int sig)
{
    (void)pid;
    (void)sig;
    board::Fail("abort()", board::kExitAbort);
}

int _getpid(void)
{
    return 1;
}

void _exit(int status)
{
    (void)status;
    board::Fail("_exit()", board::kExitAbort);
}

}  // extern "C"
