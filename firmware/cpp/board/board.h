// board.h - what the C++ firmware needs from the board (QEMU netduinoplus2):
// failure reporting, semihosting output in ITERATIONS builds, and the heap's
// free bytes (newlib-nano, behind operator new).
#ifndef CPP_BOARD_H
#define CPP_BOARD_H

#include <cstdint>

namespace board {

// Exit codes of the ITERATIONS builds (QEMU's exit status), as in the C firmware.
constexpr uint32_t kExitOutOfMemory = 2;
constexpr uint32_t kExitHardFault = 3;
constexpr uint32_t kExitOutput = 4;
constexpr uint32_t kExitEngine = 5;
constexpr uint32_t kExitHeap = 6;
constexpr uint32_t kExitAbort = 7;

// ITERATIONS builds: print and exit through semihosting. Looping builds:
// park in Halt(), where a debugger finds the core.
[[noreturn]] void Fail(const char* why, uint32_t code);
[[noreturn]] void Halt();
[[noreturn]] void ExitOk();
void Print(const char* text);
void PrintDec(uint32_t value);
void PrintHex(uint32_t value);

// The new_handler: operator new calls it when malloc returns NULL.
void OutOfMemory();

// Claims the whole heap from _sbrk once and frees it, before the first
// allocation: newlib-nano 3.3 never merges a free chunk with memory sbrk
// hands out later, so with a growing break every pinned block would push
// the break up and the first cycle would differ from the others. Afterwards
// nano allocates inside one fixed arena (as in the C firmware's mem_init).
void ClaimHeap();

// Free bytes of the newlib-nano heap: free-list chunks (headers included)
// plus the sbrk headroom up to _heap_limit.
uint32_t HeapFreeBytes();

}  // namespace board

#endif
