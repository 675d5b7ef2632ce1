// status.h - the result of every fallible tinyml call (no exceptions here:
// the firmware is built with -fno-exceptions).
#ifndef TINYML_STATUS_H
#define TINYML_STATUS_H

namespace tinyml {

enum class Status : int {
    kOk = 0,
    kError = 1,
};

}  // namespace tinyml

#endif
