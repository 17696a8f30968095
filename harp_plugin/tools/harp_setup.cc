// harp-setup: lists NICs (speed, NUMA node, PCI), picks HARP's interfaces, writes the profile
// file the plugin reads through HARP_CONFIG, and prints the hugepage setting for this host.
//
// Usage: harp-setup [--ifname LIST] [--output PATH] [--nflows N] [--apply-hugepages]
// Hugepages: (picked cards x 5 + 10) GiB of 2 MiB pages, printed as a kernel/sysctl line;
// written to /proc/sys/vm/nr_hugepages only with --apply-hugepages.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "devices.h"
#include "params.h"

using namespace harp;

int main(int argc, char** argv) {
  Params params;
  std::string output, nflows;
  bool apply = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--ifname") params.interfaces.ifname = next();
    else if (a == "--output") output = next();
    else if (a == "--nflows") nflows = next();
    else if (a == "--apply-hugepages") apply = true;
    else if (a == "--help" || a == "-h") {
      printf("usage: harp-setup [--ifname LIST] [--output PATH] [--nflows N] [--apply-hugepages]\n\n");
      printf("HARP settings (environment overrides the profile):\n");
      for (const ParamDoc& d : harpParamDocs()) {
        printf("  %-24s %-8s default %-20s %s\n", d.name, d.type, d.default_value, d.doc);
      }
      return 0;
    } else {
      fprintf(stderr, "harp-setup: unknown argument '%s' (try --help)\n", a.c_str());
      return 2;
    }
  }
  if (output.empty()) {
    const char* home = getenv("HOME");
    std::string dir = std::string(home != nullptr ? home : "/tmp") + "/.harp";
    mkdir(dir.c_str(), 0700);
    output = dir + "/profile";
  }
  std::string err;
  std::vector<Device> devs = harpDiscoverDevices(params, &err);
  if (devs.empty()) {
    fprintf(stderr, "harp-setup: %s\n", err.c_str());
    return 1;
  }
  char host[256] = "?";
  gethostname(host, sizeof(host) - 1);
  printf("HARP setup on %s\n%-12s %12s %5s  %s\n", host, "NIC", "speed(Mb/s)", "NUMA", "PCI");
  std::string picked;
  for (const Device& d : devs) {
    int sys_speed = harpSysSpeedMbps(d.name);
    printf("%-12s %12s %5d  %s\n", d.name.c_str(),
           sys_speed > 0 ? std::to_string(sys_speed).c_str() : "unknown", d.numa_node,
           d.pci_path.empty() ? "(virtual)" : d.pci_path.c_str());
    picked += (picked.empty() ? "" : ",") + d.name;
  }
  size_t cards = devs.size();
  size_t gib = cards * 5 + 10;
  size_t pages = gib * 512;  // 2 MiB pages
  std::ofstream f(output);
  if (!f) {
    fprintf(stderr, "harp-setup: cannot write %s\n", output.c_str());
    return 1;
  }
  f << "# HARP profile written by harp-setup on " << host << "\n";
  for (const Device& d : devs) {
    f << "nic " << d.name << " speed_mbps=" << d.speed_mbps << " numa=" << d.numa_node;
    if (!d.pci_path.empty()) f << " pci=" << d.pci_path.substr(d.pci_path.rfind('/') + 1);
    f << "\n";
  }
  f << "HARP_IFNAME = " << picked << "\n";
  if (!nflows.empty()) f << "HARP_NFLOWS = " << nflows << "\n";
  f.close();
  printf("Picked interfaces: %s\n", picked.c_str());
  printf("Hugepages: %zu card(s) x 5 + 10 = %zu GiB -> kernel command line 'hugepagesz=2M "
         "hugepages=%zu' or 'sysctl -w vm.nr_hugepages=%zu'\n", cards, gib, pages, pages);
  if (apply) {
    std::ofstream hp("/proc/sys/vm/nr_hugepages");
    if (!(hp << pages)) {
      fprintf(stderr, "harp-setup: could not write /proc/sys/vm/nr_hugepages (root needed)\n");
      return 1;
    }
    printf("Reserved %zu huge pages\n", pages);
  }
  printf("Wrote %s; use it with HARP_CONFIG=%s\n", output.c_str(), output.c_str());
  printf("Set up HARP successfully\n");
  return 0;
}
