// Devices: interface enumeration with getifaddrs plus /sys attributes and profile speeds.
#include "devices.h"

#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdlib.h>

#include <cstring>
#include <fstream>
#include <sstream>

namespace harp {
namespace {

int readIntFile(const std::string& path, int fallback) {
  std::ifstream f(path);
  int v = fallback;
  if (!(f >> v)) return fallback;
  return v;
}

struct Filter {
  std::vector<std::string> include;
  std::vector<std::string> exclude;
  std::vector<std::string> exact;
};

Filter parseFilter(const std::string& spec) {
  Filter f;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    if (item[0] == '^') f.exclude.push_back(item.substr(1));
    else if (item[0] == '=') f.exact.push_back(item.substr(1));
    else f.include.push_back(item);
  }
  return f;
}

bool startsWith(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

bool keep(const Filter& f, const std::string& name, bool loopback, bool explicit_spec) {
  for (const auto& e : f.exclude) if (startsWith(name, e)) return false;
  for (const auto& e : f.exact) if (name == e) return true;
  for (const auto& e : f.include) if (startsWith(name, e)) return true;
  if (explicit_spec && (!f.include.empty() || !f.exact.empty())) return false;
  if (loopback) return false;
  return !startsWith(name, "docker") && !startsWith(name, "virbr");
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

int harpSysSpeedMbps(const std::string& ifname) {
  return readIntFile("/sys/class/net/" + ifname + "/speed", -1);
}

int harpSysNumaNode(const std::string& ifname) {
  return readIntFile("/sys/class/net/" + ifname + "/device/numa_node", -1);
}

std::string harpSysPciPath(const std::string& ifname) {
  char buf[PATH_MAX];
  std::string link = "/sys/class/net/" + ifname + "/device";
  if (realpath(link.c_str(), buf) == nullptr) return "";
  return buf;
}

std::vector<Device> harpDiscoverDevices(const Params& params, std::string* err) {
  std::vector<Device> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    *err = std::string("getifaddrs: ") + strerror(errno);
    return out;
  }
  Filter filter = parseFilter(params.interfaces.ifname);
  bool explicit_spec = !params.interfaces.ifname.empty();
  for (int pass = 0; pass < 2 && out.empty(); ++pass) {
    bool allow_loopback = pass == 1;  // second pass: nothing else found, use loopback
    for (int family : {AF_INET, AF_INET6}) {
      for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != family) continue;
        if (!(a->ifa_flags & IFF_UP)) continue;
        std::string name = a->ifa_name;
        bool loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
        if (family == AF_INET6) {
          const auto* s6 = reinterpret_cast<const sockaddr_in6*>(a->ifa_addr);
          if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr)) continue;
        }
        bool ok = keep(filter, name, loopback && !allow_loopback, explicit_spec);
        if (!ok) continue;
        bool dup = false;
        for (const Device& d : out) dup |= d.name == name;
        if (dup) continue;
        Device d;
        d.name = name;
        memcpy(&d.addr, a->ifa_addr, family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
        d.pci_path = harpSysPciPath(name);
        if (d.pci_path.find("/virtual/") != std::string::npos) d.pci_path.clear();
        d.speed_mbps = harpSysSpeedMbps(name);
        d.numa_node = harpSysNumaNode(name);
        for (const ProfileNic& nic : params.interfaces.profile_nics) {
          if (nic.ifname != name) continue;
          if (nic.speed_mbps > 0) d.speed_mbps = nic.speed_mbps;
          if (nic.numa_node >= 0) d.numa_node = nic.numa_node;
        }
        if (d.speed_mbps <= 0) d.speed_mbps = 10000;  // virtual NICs report none
        d.guid = fnv1a(name + "/" + harpAddrToString(d.addr));
        out.push_back(d);
      }
    }
    if (explicit_spec) break;  // an explicit HARP_IFNAME never falls back to loopback
  }
  freeifaddrs(list);
  if (out.empty()) {
    *err = explicit_spec ? "no up interface with an address matches HARP_IFNAME='" + params.interfaces.ifname + "'"
                         : "no up interface with an address found";
  }
  return out;
}

}  // namespace harp
