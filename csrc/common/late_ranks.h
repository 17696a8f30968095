// How a timeout's message lists the ranks it still waited for; the launcher reads it back.
#pragma once

namespace lightcc {

// "...; not arrived: rank 2, rank 3 (host h, pid p)": lightcc/runner/fault_report.py (_LATE_RE) blames
// the first rank listed, so every wait that names late ranks spells it this one way.
inline constexpr const char* kNotArrived = "; not arrived: ";

}  // namespace lightcc
