// result_log.h - the application's results of the current session, one heap
// block per accepted frame, kept after app::Teardown until the next cycle
// starts (when they are handed on and deleted). Only the fragmentation build
// uses it (defects.h): its entries are allocated while a 16 KiB raw window
// is, and end up spread over the heap.
#ifndef CPP_APP_RESULT_LOG_H
#define CPP_APP_RESULT_LOG_H

#include <cstdint>

#include "tinyml/tensor.h"

namespace app {

class ResultLog {
  public:
    // Adds the result of `frame` (one new entry).
    void Record(uint32_t frame, const tinyml::Tensor& probabilities);
    // Hands the entries on and deletes them.
    void Clear();
    int size() const { return count_; }

  private:
    struct Entry {
        uint32_t frame;
        int label;
        int8_t probabilities[8];
        Entry* next;  // newer entry
    };
    Entry* oldest_ = nullptr;
    Entry* newest_ = nullptr;
    int count_ = 0;
};

}  // namespace app

#endif
