// Comm setup: one lane per instance a comm uses, flows round-robin from the runtime's lane base.
#include "comm_setup.h"

#include <limits>

#include "flow.h"
#include "runtime.h"

namespace harp {

std::unique_ptr<CommCore> harpMakeComm(CommKind kind, std::vector<int> fds, uint64_t comm_id,
                                       uint64_t chunk_bytes, const std::string& peer) {
  Runtime* rt = harpRuntime();
  auto comm = std::make_unique<CommCore>(kind == CommKind::kSend ? kSendMagic : kRecvMagic, kind);
  comm->peer = peer;
  comm->comm_id = comm_id;
  comm->nflows = static_cast<int>(fds.size());
  comm->chunk_bytes = chunk_bytes;
  comm->zc_min_bytes = rt->params.transfer.zc_mode == ZeroCopyMode::kOff
                           ? std::numeric_limits<size_t>::max()
                           : rt->params.transfer.zc_min_bytes;
  for (Request& r : comm->slots) r.comm = comm.get();
  size_t nworkers = rt->workers.size();
  uint32_t base = rt->next_lane_base.fetch_add(1);
  std::vector<Lane*> by_worker(nworkers, nullptr);
  for (size_t i = 0; i < fds.size(); ++i) {
    size_t w = (base + i) % nworkers;
    if (by_worker[w] == nullptr) {
      comm->lanes.push_back(std::make_unique<Lane>());
      by_worker[w] = comm->lanes.back().get();
      by_worker[w]->worker = rt->workers[w].get();
      by_worker[w]->comm = comm.get();
    }
    auto f = std::make_unique<Flow>();
    f->fd = fds[i];
    f->index = static_cast<int>(i);
    f->lane = by_worker[w];
    f->state = kind == CommKind::kSend ? FlowState::kIdle : FlowState::kHeader;
    f->slot = static_cast<int>(by_worker[w]->flows.size());
    by_worker[w]->flows.push_back(std::move(f));
  }
  // The start count is the comm's, shared out over its lanes.
  const int nlanes = static_cast<int>(comm->lanes.size());
  for (auto& lane : comm->lanes) {
    lane->governor.configure(static_cast<int>(lane->flows.size()),
                             (FlowGovernor::kStartFlows + nlanes - 1) / nlanes,
                             kind == CommKind::kSend && rt->params.adapt_flows);
  }
  for (auto& lane : comm->lanes) lane->worker->attach(lane.get());
  return comm;
}

void harpDestroyComm(std::unique_ptr<CommCore> comm) {
  for (auto& lane : comm->lanes) lane->worker->detach(lane.get());
}

}  // namespace harp
