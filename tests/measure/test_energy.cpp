// The GPU energy counter (measure/energy.h) and the peers' twin (scripts/peers/common.py Energy)
// against a stand-in NVML (tests/measure/fake_nvml.cpp: "GPU-fake", +1.5 J a read), and why
// there is none: a CPU run, a library that is missing or is not NVML, a GPU NVML does not know.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "test_util.h"
#include "trainbench/measure/energy.h"

namespace trainbench {
namespace {

// TB_NVML_LIB for one scope.
struct NvmlLib {
  explicit NvmlLib(const std::string& path) { setenv("TB_NVML_LIB", path.c_str(), 1); }
  ~NvmlLib() { unsetenv("TB_NVML_LIB"); }
};

TEST(Energy, TheCounterReadsInJoulesAndNamesItsGpu) {
  const NvmlLib lib(TB_FAKE_NVML);
  const EnergyCounter c = EnergyCounter::open("GPU-fake");
  EXPECT_EQ(c.source(), "nvml: Fake GPU");
  const double a = c.joules(), b = c.joules();
  EXPECT_GT(a, 1000.0);
  EXPECT_DOUBLE_EQ(b - a, 1.5);
}

TEST(Energy, WithoutACounterEachReadIsNanAndTheSourceSaysWhy) {
  const auto none = [](const std::string& uuid, const std::string& why) {
    const EnergyCounter c = EnergyCounter::open(uuid);
    EXPECT_EQ(c.source(), "none: " + why);
    EXPECT_TRUE(std::isnan(c.joules()));
  };
  none("", "a CPU run (NVML's counter is a GPU's)");
  {
    const NvmlLib lib("/nonexistent/libnvidia-ml.so.1");
    none("GPU-fake", "/nonexistent/libnvidia-ml.so.1 cannot be loaded (the NVIDIA driver's NVML)");
  }
  {
    const NvmlLib lib("libm.so.6");
    none("GPU-fake", "libm.so.6 lacks NVML's entry points");
  }
  const NvmlLib lib(TB_FAKE_NVML);
  none("GPU-other", "NVML GPU-other: Not Found");
}

// The peers read the same counter the same way: by UUID (the PyTorch peer), or the machine's
// one GPU (the JAX peer); a CPU run has none.
TEST(Energy, ThePeersReadTheSameCounter) {
  const std::string script = "import sys; sys.path.insert(0, '" TB_SOURCE_DIR
                             "/scripts/peers'); import common\n"
                             "for gpu in ('GPU-fake', True, 'GPU-other', None):\n"
                             "    e = common.Energy(gpu); a = e.joules(); b = e.joules()\n"
                             "    print(e.source, None if a is None else round(b - a, 3))\n";
  const auto r =
      testing::run_command("TB_NVML_LIB=" TB_FAKE_NVML " " TB_PYTHON " -c \"" + script + "\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "nvml: Fake GPU 1.5\nnvml: Fake GPU 1.5\nnone: NVML GPU-other: Not Found None\n"
            "none: a CPU run (NVML's counter is a GPU's) None\n");
}

}  // namespace
}  // namespace trainbench
