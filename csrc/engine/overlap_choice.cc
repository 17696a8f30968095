// decideOverlap: the rule behind LIGHTCC_OVERLAP.
#include "engine/overlap_choice.h"

namespace lightcc {

OverlapChoice decideOverlap(Overlap mode, bool one_host, int size, int cores) {
  if (mode == Overlap::kOn) return {true, "LIGHTCC_OVERLAP=on"};
  if (mode == Overlap::kOff) return {false, "LIGHTCC_OVERLAP=off"};
  if (size < 2) return {true, "auto: a single rank has no collectives to place"};
  if (!one_host) return {true, "auto: ranks on other hosts, whose network transfers overlap compute"};
  if (cores != 1) {
    return {true, cores < 1 ? "auto: this rank's cores are unknown"
                            : "auto: " + std::to_string(cores) + " cores for this rank's compute and collectives"};
  }
  return {false, "auto: one host and one core for this rank, which its compute and its shared-memory "
                 "collectives would only share"};
}

}  // namespace lightcc
