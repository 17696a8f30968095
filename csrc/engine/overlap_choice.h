// Whether the fronts start gradient collectives during the backward pass (LIGHTCC_OVERLAP).
#pragma once

#include <string>

#include "common/config.h"

namespace lightcc {

struct OverlapChoice {
  bool overlap = true;
  std::string why;
};

// kOn and kOff are the user's. kAuto overlaps unless every rank is on this host (`one_host`) and
// this rank may run on a single core (`cores`): its collectives are then copies through shared
// memory, work for that same core, so starting them mid-backward only time-slices the core
// between the two, and a peer waiting at a shared-memory barrier for a descheduled engine thread
// waits a scheduler slice. Between hosts a collective mostly waits for the network, which overlaps.
OverlapChoice decideOverlap(Overlap mode, bool one_host, int size, int cores);

}  // namespace lightcc
