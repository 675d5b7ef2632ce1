// startup.cpp - Cortex-M4 vector table and reset path of the C++ firmwares (cpp/, tflm/):
// copy .data, zero .bss, run the constructors of statics (.init_array, kept
// in flash by ld/common_sections.ld), then main. Faults end in Fail (ITERATIONS
// builds) or in board::Halt.
#include <cstdint>

#include "board/board.h"

extern "C" {
extern uint32_t _sidata, _sdata, _edata, _sbss, _ebss, _estack;
extern void (*__init_array_start[])();
extern void (*__init_array_end[])();
int main();
[[noreturn]] void Reset_Handler();
void HardFault_Handler();
void Default_Handler();
}

[[noreturn]] void Reset_Handler()
{
    uint32_t* src = &_sidata;
    for (uint32_t* dst = &_sdata; dst < &_edata;) *dst++ = *src++;
    for (uint32_t* dst = &_sbss; dst < &_ebss;) *dst++ = 0u;
    for (void (**ctor)() = __init_array_start; ctor < __init_array_end; ++ctor) (*ctor)();
    (void)main();
    board::Halt();
}

__attribute__((noinline, used)) void HardFault_Handler()
{
    board::Fail("HardFault", board::kExitHardFault);
}

void Default_Handler()
{
    board::Fail("unexpected exception", board::kExitHardFault);
}

namespace {

using Vector = void (*)();

// Core exceptions only: nothing here enables a peripheral interrupt.
__attribute__((section(".isr_vector"), used)) const Vector kVectors[16] = {
    reinterpret_cast<Vector>(&_estack),  // initial SP
    Reset_Handler,
    Default_Handler,  // NMI
    HardFault_Handler,
    HardFault_Handler,  // MemManage
    HardFault_Handler,  // BusFault
    HardFault_Handler,  // UsageFault
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    Default_Handler,  // SVCall
    Default_Handler,  // DebugMon
    nullptr,
    Default_Handler,  // PendSV
    Default_Handler,  // SysTick
};

}  // namespace
