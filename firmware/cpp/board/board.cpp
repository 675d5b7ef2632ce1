// board.cpp - board.h, and the three newlib system calls abort() needs.
//
// operator new (libstdc++'s, GCC 12, built for newlib-nano without
// exceptions) calls malloc; on NULL it calls the new_handler if one is set
// and retries, else abort(): raise(SIGABRT) -> _kill, then _exit(1). main()
// installs OutOfMemory as the handler, so an allocation failure is reported
// as such; _kill and _exit catch every other abort().
#include "board/board.h"

#include <cstdlib>

#include "semihost.h"
#include "sysmem.h"

extern "C" {
// newlib-nano's free list (address-ordered): {long size; chunk *next}, the
// size including the chunk header.
struct NanoChunk {
    long size;
    NanoChunk* next;
};
extern NanoChunk* __malloc_free_list;
}

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

void ClaimHeap()
{
    // volatile: GCC would drop a malloc/free pair whose block is never used.
    void* volatile whole = std::malloc(sysmem_headroom() - 16u);
    std::free(whole);
}

uint32_t HeapFreeBytes()
{
    uint32_t sum = 0;
    for (const NanoChunk* c = __malloc_free_list; c != nullptr; c = c->next) {
        sum += static_cast<uint32_t>(c->size);
    }
    return sum + sysmem_headroom();
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
