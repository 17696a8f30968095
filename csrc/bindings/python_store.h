// python_store.h: a rendezvous::Store that calls a Python store object (torch.distributed's Store).
//
// DESIGN. torch hands the "lightcc" backend's creator a store every member of the group shares;
// init meets through it (Mesh::connect) instead of serving a store of its own. Each call takes
// the GIL for that call only: init() runs Engine::create with the GIL released, so the other
// Python threads (and torch's own store client) keep running while a rank waits for its peers.
// Waits poll the object's `check(keys)` (torch logs a warning for every timed-out `wait`, so
// short waits in a loop would flood stderr) and give way to the caller's interrupt check between
// polls, as lightcc's own store client does. Every key is `prefix` + the engine's key, so each init
// meets under fresh names even when a store is reused. Python's exceptions become PeerFailure
// naming the key and "torch's store".
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "transport/rendezvous/store.h"

namespace lightcc::bindings {

class PythonStore : public rendezvous::Store {
 public:
  // Call with the GIL held. `store` needs set(key, value), get(key) -> bytes, add(key, n) -> int
  // and check(keys) -> bool (or, failing that, wait(keys, timedelta)).
  PythonStore(pybind11::object store, std::string prefix);
  // Drops the Python object if detach() did not (taking the GIL, unless Python has finalized).
  ~PythonStore() override;

  // With the GIL held, once init is over: later calls fail, and the store object is released
  // now rather than whenever the engine (which keeps a copy of its init options) goes.
  void detach();

  Status set(const std::string& key, const std::string& value) override;
  Status get(const std::string& key, std::string* value, double timeout_s) override;
  Status add(const std::string& key, int64_t delta, int64_t* result) override;
  Status wait(const std::vector<std::string>& keys, double timeout_s) override;
  std::string where() const override;

 private:
  // The Python exception in flight (GIL held) as a Status naming the call and the key.
  Status failed(const std::string& call, const std::string& key, const pybind11::error_already_set& err) const;
  Status detached(const std::string& call, const std::string& key) const;

  pybind11::object store_;  // null once detached
  const std::string prefix_;
  bool has_check_ = false;
};

}  // namespace lightcc::bindings
