// Devices: discovers the NICs HARP may use (HARP_IFNAME, profile) with speed, NUMA node, PCI path.
#pragma once

#include <string>
#include <vector>

#include "net_util.h"
#include "params.h"

namespace harp {

struct Device {
  std::string name;       // interface name, e.g. "eth0"
  SockAddr addr{};        // address listeners bind to (port 0)
  std::string pci_path;   // /sys/devices/... or "" for a virtual NIC
  int speed_mbps = 0;
  int numa_node = -1;
  uint64_t guid = 0;
};

// Lists up interfaces that have an address. With HARP_IFNAME, keeps those whose name equals an
// entry or starts with it ("=eth0" means exactly eth0, "^docker" excludes). Without it, keeps
// non-loopback interfaces except docker/virbr bridges and falls back to loopback if none is left.
std::vector<Device> harpDiscoverDevices(const Params& params, std::string* err);

// Reads /sys/class/net/<ifname>/{speed,device/numa_node,device}: exposed for harp-setup.
int harpSysSpeedMbps(const std::string& ifname);
int harpSysNumaNode(const std::string& ifname);
std::string harpSysPciPath(const std::string& ifname);

}  // namespace harp
