// planner.cpp - GreedyPlanner (planner.h).
#include "tinyml/planner.h"

namespace tinyml {

GreedyPlanner::GreedyPlanner(int max_buffers)
    : requirements_(new Requirement[max_buffers]), order_(new int[max_buffers]), max_(max_buffers)
{
}

GreedyPlanner::~GreedyPlanner()
{
    delete[] order_;
    delete[] requirements_;
}

int GreedyPlanner::AddBuffer(size_t bytes, int first_use, int last_use)
{
    if (count_ == max_) return -1;
    requirements_[count_] = Requirement{bytes, first_use, last_use, 0};
    order_[count_] = count_;
    return count_++;
}

bool GreedyPlanner::Overlaps(const Requirement& a, const Requirement& b) const
{
    return a.first_use <= b.last_use && b.first_use <= a.last_use;
}

size_t GreedyPlanner::Plan()
{
    // Largest first (stable: equal sizes keep their order).
    for (int i = 1; i < count_; ++i) {
        const int id = order_[i];
        int j = i;
        while (j > 0 && requirements_[order_[j - 1]].bytes < requirements_[id].bytes) {
            order_[j] = order_[j - 1];
            --j;
        }
        order_[j] = id;
    }
    size_t arena = 0;
    for (int i = 0; i < count_; ++i) {
        Requirement& r = requirements_[order_[i]];
        size_t candidate = 0;
        // Move past every placed buffer that is alive at the same time and
        // intersects the candidate range, until none does.
        bool moved = true;
        while (moved) {
            moved = false;
            for (int k = 0; k < i; ++k) {
                const Requirement& p = requirements_[order_[k]];
                if (Overlaps(r, p) && candidate < p.offset + p.bytes &&
                    p.offset < candidate + r.bytes) {
                    candidate = (p.offset + p.bytes + kAlignment - 1) & ~(kAlignment - 1);
                    moved = true;
                }
            }
        }
        r.offset = candidate;
        if (candidate + r.bytes > arena) arena = candidate + r.bytes;
    }
    return (arena + kAlignment - 1) & ~(kAlignment - 1);
}

size_t GreedyPlanner::offset(int id) const
{
    return requirements_[id].offset;
}

}  // namespace tinyml
