// main.cpp - the device loop of the C++ firmware: per cycle one session of
// the gesture model (app::Setup, Interpreter::AllocateTensors,
// kInvocationsPerCycle x Interpreter::Invoke, app::Teardown). No model switch.
//
// Without ITERATIONS it loops forever and makes no semihosting call (a
// debugger observes it). With ITERATIONS=N it runs N cycles, checks the
// outputs, the rejected frames and the heap, prints one line and exits
// through semihosting.
#include <new>

#include "app/result_log.h"
#include "app/sensor.h"
#include "app/session.h"
#include "board/board.h"
#include "board/nano_heap.h"
#include "defects.h"
#include "gesture_model.h"
#include "tinyml/kernels/builtin_ops.h"

namespace app {

constexpr int kInvocationsPerCycle = 4;

struct CycleResult {
    uint32_t crc = 0xffffffffu;  // over the outputs of the accepted frames
    int rejected = 0;            // frames an Invoke refused
    int rejected_at = -1;        // invocation index of the last one
    int failed_node = -1;        // the node that refused it
};

uint32_t Crc32(uint32_t crc, const int8_t* data, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        crc ^= static_cast<uint8_t>(data[i]);
        for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return crc;
}

// Built by startup's constructor pass; RegisterBuiltinOps fills it once.
tinyml::OpResolver g_resolver;
ResultLog g_history;
// The session of the running cycle (nullptr between cycles), for a debugger:
// g_session->interpreter->nodes_[i].op->name is the name of layer i.
Session* g_session;

__attribute__((noinline)) void RunCycle(const tinyml::ModelImage& image, uint32_t cycle,
                                        CycleResult* result)
{
    // The previous session's results are handed on (and deleted) first.
    if (defects::kFragmentation) g_history.Clear();
    Session* session = Setup(image, g_resolver);
    if (session == nullptr) board::Fail("app::Setup: bad model image", board::kExitEngine);
    g_session = session;
    tinyml::Interpreter& interpreter = *session->interpreter;
    if (interpreter.AllocateTensors() != tinyml::Status::kOk) {
        board::Fail("AllocateTensors", board::kExitEngine);
    }
    for (int i = 0; i < kInvocationsPerCycle; ++i) {
        const uint32_t frame = cycle * kInvocationsPerCycle + static_cast<uint32_t>(i);
        int16_t* window = nullptr;
        if (defects::kFragmentation) {
            window = ReadWindow(frame);
            Downsample(window, *interpreter.input());
        } else {
            ReadFrame(frame, *interpreter.input());
        }
        if (interpreter.Invoke() == tinyml::Status::kOk) {
            const tinyml::Tensor& out = *interpreter.output();
            result->crc = Crc32(result->crc, out.int8(), out.bytes);
            // The defect: the entry is allocated while the 16 KiB window
            // still is, so it lands below it, and the next window below it.
            if (defects::kFragmentation) g_history.Record(frame, out);
        } else {
            // A rejected frame is dropped; the next one is classified as usual.
            ++result->rejected;
            result->rejected_at = i;
            result->failed_node = interpreter.failed_node();
        }
        delete[] window;
    }
    g_session = nullptr;
    Teardown(session);
}

}  // namespace app

// Current cycle (0-based) and the free bytes after each teardown, for a debugger.
uint32_t g_cycle;
// A history entry's chunk in nano's accounting: the 20-byte entry, the 4-byte
// size header and 4 bytes nano adds to align the pointer to 8.
constexpr uint32_t kEntryChunk = 28;
// The leaked patch buffer's chunk: 16 x 3 x 3 x 1 = 144 bytes + 8.
constexpr uint32_t kLeakChunk = 152;
uint32_t g_free_after_teardown[4];

int main()
{
    board::ClaimHeap();
    std::set_new_handler(board::OutOfMemory);
    if (tinyml::ops::RegisterBuiltinOps(app::g_resolver) != tinyml::Status::kOk) {
        board::Fail("RegisterBuiltinOps", board::kExitEngine);
    }
    const tinyml::ModelImage image =
        defects::kLoadPeak
            ? tinyml::ModelImage{"gesture", g_gesture_model_zrle, kGestureModelZrleSize, true}
            : tinyml::ModelImage{"gesture", g_gesture_model, kGestureModelSize, false};
    uint32_t crc0 = 0;
#ifdef ITERATIONS
    const uint32_t free_start = board::HeapFreeBytes();
    uint32_t prev_free = free_start, leak_step = 0;
    for (uint32_t cycle = 0; cycle < static_cast<uint32_t>(ITERATIONS); ++cycle) {
#else
    for (uint32_t cycle = 0;; ++cycle) {
#endif
        g_cycle = cycle;
        app::CycleResult r;
        app::RunCycle(image, cycle, &r);
        // Exactly the clipped frame (the 4th) is refused, by the first layer.
        if (r.rejected != 1 || r.rejected_at != static_cast<int>(app::kClippedEvery) - 1 ||
            r.failed_node != 0) {
            board::Fail("unexpected rejected frames", board::kExitEngine);
        }
        if (cycle == 0) {
            crc0 = r.crc;
        } else if (r.crc != crc0) {
            board::Fail("wrong output (CRC differs from cycle 1)", board::kExitOutput);
        }
#ifdef ITERATIONS
        const uint32_t f = board::HeapFreeBytes();
        if (cycle < 4) g_free_after_teardown[cycle] = f;
        if (defects::kLeakOnRejectedFrame) {
            // The leak must show as the same drop in every cycle.
            const uint32_t step = prev_free > f ? prev_free - f : 0u;
            // One patch buffer per cycle: nano hands out a whole free chunk when
            // splitting it would leave less than 16 bytes, so a cycle may lose
            // up to 12 bytes more than the chunk itself.
            if (step < kLeakChunk || step > kLeakChunk + 12u) {
                board::Print("free after teardown: ");
                board::PrintDec(f);
                board::Print(", down ");
                board::PrintDec(step);
                board::Print(" in cycle ");
                board::PrintDec(cycle + 1);
                board::Print("\n");
                board::Fail("leak is not constant per cycle", board::kExitHeap);
            }
            leak_step = step;
        } else if (defects::kFragmentation) {
            // Only the session's results stay (each may get up to 12 bytes of
            // slack, as above), and every cycle is laid out alike.
            const uint32_t kept = static_cast<uint32_t>(app::g_history.size());
            const bool history_only =
                f + kept * kEntryChunk <= free_start && f + kept * (kEntryChunk + 12u) >= free_start;
            if (!history_only || (cycle > 0 && f != g_free_after_teardown[0])) {
                board::Print("free after teardown: ");
                board::PrintDec(f);
                board::Print("\n");
                board::Fail("free after teardown not constant", board::kExitHeap);
            }
        } else if (f != free_start) {
            board::Print("free after teardown: ");
            board::PrintDec(f);
            board::Print("\n");
            board::Fail("heap not back to its start after app::Teardown", board::kExitHeap);
        }
        prev_free = f;
#endif
    }
#ifdef ITERATIONS
    board::Print(CPP_VARIANT_NAME ": ");
    board::PrintDec(static_cast<uint32_t>(ITERATIONS));
    board::Print(" cycles x 4 invocations ok (clipped frame rejected by node 0), output crc ");
    board::PrintHex(crc0);
    board::Print(", free after teardown ");
    board::PrintDec(board::HeapFreeBytes());
    if (defects::kLeakOnRejectedFrame) {
        board::Print(" (leak per cycle ");
        board::PrintDec(leak_step);
        board::Print(")");
    }
    board::Print("\n");
    board::ExitOk();
#endif
}
