// session.h - one model session of the application: the model opened from
// flash and an interpreter over it. A cycle is Setup, AllocateTensors,
// kInvocationsPerCycle x Invoke, Teardown (main.cpp).
#ifndef CPP_APP_SESSION_H
#define CPP_APP_SESSION_H

#include "tinyml/interpreter.h"
#include "tinyml/model.h"
#include "tinyml/op_resolver.h"

namespace app {

struct Session {
    tinyml::Model* model = nullptr;
    tinyml::Interpreter* interpreter = nullptr;
};

// Opens the model and creates its interpreter; nullptr if the image is bad.
Session* Setup(const tinyml::ModelImage& image, const tinyml::OpResolver& resolver);
// Deletes the interpreter (kernels, tensors, arena), the model and the session.
void Teardown(Session* session);

}  // namespace app

#endif
