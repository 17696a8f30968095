// Completion hook: the registered function and its argument, called by the workers.
#include "completion_hook.h"

#include <atomic>

#define HARP_EXPORT extern "C" __attribute__((visibility("default")))

namespace harp {
namespace {

// The argument is published before the function and read after it, so a worker that sees a
// function sees its argument. Registrants keep `arg` alive for the life of the process and register
// once (lightcc passes a process-wide registry): re-registering another pair while workers run
// could hand one call the new function with the old argument.
std::atomic<void*> g_arg{nullptr};
std::atomic<void (*)(void*)> g_fn{nullptr};

}  // namespace

void notifyCompletion() {
  void (*fn)(void*) = g_fn.load(std::memory_order_acquire);
  if (fn != nullptr) fn(g_arg.load(std::memory_order_relaxed));
}

}  // namespace harp

// fn == nullptr unregisters.
HARP_EXPORT void harpSetCompletionHook(void (*fn)(void*), void* arg) {
  if (fn != nullptr) harp::g_arg.store(arg, std::memory_order_relaxed);
  harp::g_fn.store(fn, std::memory_order_release);
}
