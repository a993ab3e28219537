// The SDPA backend guard: forcing one attention kernel and restoring LibTorch's global
// switches, and the backend a CPU run resolves to.
#include <gtest/gtest.h>

#include "test_util.h"
#include "trainbench/model/sdpa_backend.h"

namespace trainbench {
namespace {

TEST(SdpaBackendGuard, ForcesOneBackendAndRestoresTheGlobalSwitches) {
  const SdpaFlags original = sdpa_flags();
  SdpaFlags start = original;
  start.flash = false;  // a non-default state, to see that it is what comes back
  set_sdpa_flags(start);
  const SdpaFlags before = sdpa_flags();
  EXPECT_FALSE(before.flash);
  {
    SdpaBackendGuard guard(SdpaBackend::kMath);
    const SdpaFlags f = sdpa_flags();
    EXPECT_TRUE(f.math);
    EXPECT_FALSE(f.flash);
    EXPECT_FALSE(f.mem_efficient);
    EXPECT_FALSE(f.cudnn);
    {
      SdpaBackendGuard inner(SdpaBackend::kFlash);
      EXPECT_TRUE(sdpa_flags().flash);
      EXPECT_FALSE(sdpa_flags().math);  // math off too: no silent fallback
    }
    EXPECT_TRUE(sdpa_flags() == f);  // the inner guard restored the outer one's state
  }
  EXPECT_TRUE(sdpa_flags() == before);
  {
    SdpaBackendGuard guard(SdpaBackend::kAuto);  // changes nothing
    EXPECT_TRUE(sdpa_flags() == before);
  }
  EXPECT_TRUE(sdpa_flags() == before);
  set_sdpa_flags(original);
  EXPECT_TRUE(sdpa_flags() == original);
}

TEST(SdpaBackendGuard, ResolvedBackendIsMathOrFlashOnTheCpu) {
  RunConfig c = testing::tiny_config();
  EXPECT_EQ(resolve_sdpa_backend(make_plan(c)), "");  // --flash 0: no SDPA call
  c.flash = 1;
  c.sdpa_backend = SdpaBackend::kMath;
  EXPECT_EQ(resolve_sdpa_backend(make_plan(c)), "math");
  c.sdpa_backend = SdpaBackend::kAuto;
  const std::string chosen = resolve_sdpa_backend(make_plan(c));
  EXPECT_TRUE(chosen == "math" || chosen == "flash") << chosen;
}

}  // namespace
}  // namespace trainbench
