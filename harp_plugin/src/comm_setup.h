// Comm setup: spreads a connected comm's flows over the runtime's instances, and takes them back.
//
// Apart from comm.h because placing lanes needs the runtime (params, instances) while comm.h is
// the data model the instances themselves are built on: connect/accept/close → comm_setup →
// runtime → worker → {comm, flow}, one way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm.h"

namespace harp {

// Builds the lanes of a connected comm from its flow sockets and attaches them to instances.
// Takes ownership of the fds, which become the lanes' flows; it cannot fail once they are connected.
std::unique_ptr<CommCore> harpMakeComm(CommKind kind, std::vector<int> fds, uint64_t comm_id,
                                       uint64_t chunk_bytes, const std::string& peer);
// Detaches every lane (waits for the instances to drop the flows and close the fds).
void harpDestroyComm(std::unique_ptr<CommCore> comm);

}  // namespace harp
