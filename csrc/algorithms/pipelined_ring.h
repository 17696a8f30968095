// Pipelined ring allreduce and reducescatter: ring phases cut into chunks, reduced and forwarded as chunks arrive.
//
// DESIGN. The plain ring (ring_collectives.cc) runs 2(p-1) steps of one whole segment each and
// reduces a segment only once all of it has arrived, so between steps every link idles while the
// last bytes drain, the segment is reduced and the next send starts. On a link that is the
// bottleneck (a 1 Gbit/s host link) that idle time is a few percent of every large allreduce,
// which gloo's chunked ring does not pay. Here each segment is cut into n chunks and the steps
// become one stream of 2(p-1)·n messages per direction, in step-major order. Message (s, j) is
// sent once message (s-1, j) has been received (and, in the reduce-scatter half, reduced), so
// step s+1 starts on chunk 0 while step s is still moving chunk n-1. Receives of the
// reduce-scatter half land in a small ring of chunk slots; those of the allgather half land in
// place, each posted only after the send that read that region completed. Every element is still
// reduced once per step in the same order as the plain ring, so results are bit-identical to it
// and on every member.
//
// Fused tensors (an IoVec of several) are staged lazily: each chunk is gathered into the scratch
// buffer just before its first use (its step-0 send, or its one reduce-scatter reduction) and
// scattered out once final (its last reduction, or its allgather receive), so the link keeps
// moving while the copies run instead of idling through a whole-buffer copy in and out.
#pragma once

#include <cstddef>
#include <vector>

#include "algorithms/collectives.h"
#include "algorithms/iovec.h"

namespace lightcc {

// Receives (and sends) in flight per direction; also the number of reduce-scatter chunk slots.
constexpr int kRingWindow = 8;

// Chunks per segment for a ring whose largest segment is `max_segment_bytes`, cutting into pieces
// of about `chunk_bytes`; 1 means the pipeline would not pay (the caller runs the plain ring).
size_t ringChunks(size_t max_segment_bytes, size_t chunk_bytes);

// The allreduce of `buf` (segments [start[m], start[m]+len[m]) in elements, one per member) over
// the ring of `c`, cut into `chunks` chunks per segment. Applies spec's postscale and integer
// divisor to this member's segment. Without `io`, `buf` holds the data and prescale is the
// caller's; with it, `buf` is the work area (the single output, or scratch of io->total() bytes)
// that each chunk is staged into from `io` (and prescaled) on first use and out of once final.
Status pipelinedRingAllreduce(SetComm& c, char* buf, const IoVec* io, const std::vector<size_t>& start,
                              const std::vector<size_t>& len, size_t chunks, const ReduceSpec& spec);

// The reduce-scatter half alone, in the work area `buf`: with `io` (one segment, its input apart
// from `buf`) each chunk is copied in and prescaled when first needed, as the allreduce stages
// its tensors; with nullptr `buf` holds the prescaled input already. Afterwards member c.me's
// segment holds the full reduction with spec's postscale and integer divisor applied, the others
// partial sums. Every chunk of every segment must hold at least one element.
Status pipelinedRingReducescatter(SetComm& c, char* buf, const IoVec* io, const std::vector<size_t>& start,
                                  const std::vector<size_t>& len, size_t chunks, const ReduceSpec& spec);

}  // namespace lightcc
