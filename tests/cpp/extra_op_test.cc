// Builds op_traits_test.cc with one more data op, numbered past every other (OpType::kTestGather).
//
// A decision made by op number ("codes above kReducescatter need no caller-stream event") gives the
// new op's GPU tensors no event, a silent race with the kernels producing them; this test fails
// then. Header-only: nothing from lightcc_core is linked, whose objects know nine ops.
#define LIGHTCC_TEST_EXTRA_OP 1
#include "op_traits_test.cc"
