// store_collectives: allgather and barrier built from rendezvous store set/get/add/wait.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "transport/rendezvous/store.h"

namespace lightcc {
namespace rendezvous {

// Every rank publishes `mine` under "<prefix>/<rank>" and reads all `size` entries into *all
// (index = rank). A prefix must be used for one allgather only: keys are never deleted.
// Costs each rank 1 SET and `size` GETs.
Status allgather(Store& client, const std::string& prefix, int rank, int size,
                 const std::string& mine, std::vector<std::string>* all, double timeout_s);

// Returns once all `size` ranks have entered the barrier called `name`, or Status::Timeout saying
// how many arrived. Each barrier needs a fresh name (e.g. with a sequence number).
// Costs each rank 1 ADD and 1 WAIT (plus 1 SET for the last to arrive).
Status barrier(Store& client, const std::string& name, int size, double timeout_s);

}  // namespace rendezvous
}  // namespace lightcc
