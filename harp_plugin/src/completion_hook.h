// Completion hook: an optional extension beside the NCCL net ABI, for a host engine that sleeps.
//
// NCCL polls test() from its proxy thread and never registers a hook, so nothing changes for it.
// lightcc's engine, which drives this same plugin for host tensors, would otherwise have to poll
// test() too while it waits; with a hook registered (harpSetCompletionHook, exported by name) the
// workers call it whenever a chunk of a request completes or a connection fails, and the engine
// sleeps on its doorbell until then.
#pragma once

namespace harp {

// Calls the registered hook, if any (any worker thread, any time).
void notifyCompletion();

}  // namespace harp
