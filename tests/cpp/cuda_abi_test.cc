// The CUDA library's C boundary (csrc/cuda/c_abi.h), both directions in one process: a table
// exported to C functions and imported back keeps every Status code and message, passes other
// members through, stops exceptions at the boundary, and cuts over-long messages safely.
#include <stdexcept>
#include <string>

#include "check.h"
#include "cuda/c_abi.h"

using lightcc::Status;
using lightcc::StatusCode;
using lightcc::testing::check;

namespace {

// A table shaped like the real ones: the version, then function pointers.
struct DemoTableV3 {
  int version;
  Status (*fail)(int code, const char* message, size_t* seen);
  size_t (*twice)(size_t n);
  Status (*thrower)(int kind);
};

Status fail(int code, const char* message, size_t* seen) {
  *seen += 1;
  return Status(static_cast<StatusCode>(code), message);
}
size_t twice(size_t n) { return 2 * n; }
Status thrower(int kind) {
  if (kind == 0) throw std::runtime_error("bad things");
  throw 7;
}

const DemoTableV3* own() {
  static const DemoTableV3 table = {3, fail, twice, thrower};
  return &table;
}
const void* ownAsVoid() { return own(); }

using DemoList = lightcc::cuda::abi::TableList<DemoTableV3, &DemoTableV3::fail, &DemoTableV3::twice,
                                               &DemoTableV3::thrower>;

// What the library would export, and what the core makes of it.
const DemoTableV3 kExported = DemoList::exportTable<ownAsVoid>();
const void* loaded() { return &kExported; }

}  // namespace

int main() {
  const DemoTableV3 imported = DemoList::importTable<loaded>();
  check(kExported.version == 3 && imported.version == 3, "the version crosses");
  check(kExported.fail != own()->fail && imported.fail != kExported.fail, "Status members are wrapped both ways");
  check(kExported.twice == &twice && imported.twice == &twice, "other members cross unchanged");

  size_t seen = 0;
  Status ok = imported.fail(0, "", &seen);
  check(ok.ok() && ok.message().empty() && seen == 1, "OK crosses, arguments reach the function");
  for (int code = 1; code <= 9; ++code) {
    Status st = imported.fail(code, ("error " + std::to_string(code)).c_str(), &seen);
    check(int(st.code()) == code && st.message() == "error " + std::to_string(code),
          "code " + std::to_string(code) + " and its message cross");
  }
  const std::string longMessage(5000, 'x');
  Status cut = imported.fail(int(StatusCode::kInternal), longMessage.c_str(), &seen);
  check(cut.code() == StatusCode::kInternal && cut.message() == longMessage.substr(0, 1023),
        "an over-long message is cut to the buffer, terminated");

  Status thrown = imported.thrower(0);
  check(thrown.code() == StatusCode::kInternal && thrown.message().find("bad things") != std::string::npos,
        "a std::exception becomes kInternal with its text: " + thrown.message());
  Status other = imported.thrower(1);
  check(other.code() == StatusCode::kInternal && other.message().find("unknown exception") != std::string::npos,
        "any other exception becomes kInternal: " + other.message());
  return lightcc::testing::summary();
}
