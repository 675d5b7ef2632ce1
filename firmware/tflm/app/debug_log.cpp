// debug_log.cpp - what TFLM needs from the platform to report: DebugLog, where
// MicroErrorReporter writes (each report, then "\r\n"), and newlib's __assert_func, where
// TFLITE_DCHECK's assert() ends (ours, so that newlib's stdio is not linked for it).
//
// ITERATIONS builds print the reports through semihosting; every build keeps the last one
// in g_tflm_last_report, where a debugger can read why AllocateTensors failed.
#include <cstring>

#include "board/board.h"
#include "tensorflow/lite/micro/debug_log.h"

// The last report, NUL-terminated (cut to the buffer).
char g_tflm_last_report[160];

namespace {

void KeepReport(const char* text)
{
    std::strncpy(g_tflm_last_report, text, sizeof(g_tflm_last_report) - 1);
    g_tflm_last_report[sizeof(g_tflm_last_report) - 1] = '\0';
}

}  // namespace

extern "C" void DebugLog(const char* s)
{
    board::Print(s);
    if (std::strcmp(s, "\r\n") != 0) KeepReport(s);
}

extern "C" [[noreturn]] void __assert_func(const char* file, int line, const char* function,
                                           const char* expression)
{
    (void)line;
    (void)function;
    KeepReport(file);
    board::Print("assertion failed: ");
    board::Print(expression);
    board::Print(" in ");
    board::Print(file);
    board::Print("\n");
    board::Fail("assert() in TFLM", board::kExitAbort);
}
