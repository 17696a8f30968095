// Allreduce among ranks of one host by cross-memory attach: each rank reads its share straight from its peers' tensors.
//
// DESIGN. The staged shared-memory allreduce (shm_collectives.cc) copies what peers reduce into
// staging, they reduce from it, and each copies the others' reduced shares out: per 1 MiB window,
// three barriers and every byte copied twice. Where every member may read the others' memory
// (transport/shm/cma.h), each rank publishes its tensors' addresses in its meta area; after one
// barrier it reduces its 1/p share reading the peers' inputs with process_vm_readv into a small
// cache-sized buffer (one kernel copy), writes the result into its own output, and after a second
// barrier reads the others' reduced shares from their outputs into its own, one kernel copy; a
// third barrier keeps every tensor alive until all have read it. Shares and reduction order are
// the staged path's (members in order, each element reduced once), so results are bit-identical
// to it and on every member.
#pragma once

#include "algorithms/collectives.h"

namespace lightcc {

// Whether `c`'s members may take cmaAllreduce for `io`: every member's init probe said yes and
// the tensors' addresses fit the meta area. The same answer on every member.
bool cmaAllreduceApplies(const SetComm& c, const IoVec& io);
Status cmaAllreduce(SetComm& c, const IoVec& io, const ReduceSpec& spec);

}  // namespace lightcc
