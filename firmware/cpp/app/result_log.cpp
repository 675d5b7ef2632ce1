// result_log.cpp - ResultLog (result_log.h).
#include "app/result_log.h"

namespace app {

void ResultLog::Record(uint32_t frame, const tinyml::Tensor& probabilities)
{
    Entry* e = new Entry();
    e->frame = frame;
    const int n = probabilities.elements() < 8 ? probabilities.elements() : 8;
    int best = 0;
    for (int i = 0; i < n; ++i) {
        e->probabilities[i] = probabilities.int8()[i];
        if (e->probabilities[i] > e->probabilities[best]) best = i;
    }
    e->label = best;
    if (newest_ != nullptr) newest_->next = e;
    newest_ = e;
    if (oldest_ == nullptr) oldest_ = e;
    ++count_;
}

void ResultLog::Clear()
{
    while (oldest_ != nullptr) {
        Entry* e = oldest_;
        oldest_ = e->next;
        delete e;
    }
    newest_ = nullptr;
    count_ = 0;
}

}  // namespace app
