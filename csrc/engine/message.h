// Message: the binary wire format of negotiation messages, with bounds-checked parsing.
//
// Little-endian, length-prefixed. A RequestList is [u32 magic][u32 count][Request...]; a
// ResponseList is [u32 magic][u32 count][Response...]. Strings and vectors carry a u32 length
// capped at kMaxWireItems so a malformed peer message is an error, never a huge allocation.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "engine/request.h"

namespace lightcc {

constexpr uint32_t kRequestListMagic = 0x4C524551;   // "LREQ"
constexpr uint32_t kResponseListMagic = 0x4C525350;  // "LRSP"
constexpr uint32_t kMaxWireItems = 1u << 24;

std::string serializeRequests(const std::vector<Request>& requests);
std::string serializeResponses(const std::vector<Response>& responses);
// `peer` names the sender in errors.
Status parseRequests(const std::string& bytes, int peer, std::vector<Request>* out);
Status parseResponses(const std::string& bytes, int peer, std::vector<Response>* out);

}  // namespace lightcc
