// planner.h - the arena layout of the activations: greedy by size, each
// buffer at the lowest offset where it meets no buffer whose lifetime
// (first to last node that uses it) overlaps its own.
#ifndef TINYML_PLANNER_H
#define TINYML_PLANNER_H

#include <cstddef>

namespace tinyml {

class GreedyPlanner {
  public:
    static constexpr size_t kAlignment = 16;

    // Allocates room for `max_buffers` requirements; lives only while
    // AllocateTensors plans.
    explicit GreedyPlanner(int max_buffers);
    ~GreedyPlanner();
    GreedyPlanner(const GreedyPlanner&) = delete;
    GreedyPlanner& operator=(const GreedyPlanner&) = delete;

    // Returns the buffer's id, or -1 when the planner is full.
    int AddBuffer(size_t bytes, int first_use, int last_use);
    // Places every buffer; returns the arena size.
    size_t Plan();
    size_t offset(int id) const;

  private:
    struct Requirement {
        size_t bytes;
        int first_use;
        int last_use;
        size_t offset;
    };
    bool Overlaps(const Requirement& a, const Requirement& b) const;

    Requirement* requirements_;
    int* order_;
    int count_ = 0;
    int max_;
};

}  // namespace tinyml

#endif
