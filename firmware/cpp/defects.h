// defects.h - which of the firmware's deliberate defects this build has.
//
// The Makefile builds one ELF per variant (firmware/README.md, "C++ interpreter
// firmware") and passes the switches below; the healthy build has none. Every
// defect is written the way it would slip into a real firmware, and the
// switch only chooses between the buggy and the correct line.
#ifndef CPP_DEFECTS_H
#define CPP_DEFECTS_H

namespace defects {

#ifdef CPP_DEFECT_LEAK
// Conv2D::Eval returns early on a clipped input frame and skips its
// delete[] of the patch buffer (every 4th invocation).
constexpr bool kLeakOnRejectedFrame = true;
#else
constexpr bool kLeakOnRejectedFrame = false;
#endif

#ifdef CPP_DEFECT_LOAD_PEAK
// Model::Open reads the compressed model file into RAM whole and inflates it
// through a scratch window: file + scratch + model are live together.
constexpr bool kLoadPeak = true;
#else
constexpr bool kLoadPeak = false;
#endif

#ifdef CPP_DEFECT_FRAGMENTATION
// The application reads each frame as a 16 KiB raw window on the heap and
// keeps a history of results across cycles, allocating each entry while the
// window is still allocated: small long-lived blocks between big short-lived
// ones, spread over the heap.
constexpr bool kFragmentation = true;
#else
constexpr bool kFragmentation = false;
#endif

}  // namespace defects

#endif
