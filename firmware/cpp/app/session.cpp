// session.cpp - app::Setup and app::Teardown (session.h).
#include "app/session.h"

namespace app {

__attribute__((noinline)) Session* Setup(const tinyml::ModelImage& image,
                                         const tinyml::OpResolver& resolver)
{
    Session* session = new Session();
    session->model = tinyml::Model::Open(image);
    if (session->model == nullptr) {
        delete session;
        return nullptr;
    }
    session->interpreter = new tinyml::Interpreter(*session->model, resolver);
    return session;
}

__attribute__((noinline)) void Teardown(Session* session)
{
    if (session == nullptr) return;
    delete session->interpreter;
    delete session->model;
    delete session;
}

}  // namespace app
