// board.h - what the C++ firmwares need from the board (QEMU netduinoplus2):
// failure reporting and semihosting output in ITERATIONS builds. Shared by
// cpp/ and tflm/ (the heap behind operator new is each firmware's own:
// nano_heap.h here, tflm/app/heap.cpp there).
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

}  // namespace board

#endif
