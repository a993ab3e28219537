// The configure step's refusals (cmake/torch.cmake): a machine without the project's virtual
// environment, without torch, with a torch older than 2.11 or with a CUDA toolkit that does not
// match the wheel stops with one message naming what is wrong and the fix, before anything is
// built. Each case configures the source tree into a fresh folder with a stand-in python or nvcc.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <regex>
#include <string>

#include "test_util.h"

namespace trainbench {
namespace {

// Writes an executable shell script.
void write_script(const std::string& path, const std::string& body) {
  testing::write_file(path, "#!/bin/sh\n" + body);
  chmod(path.c_str(), 0755);
}

// cmake's configure output with its line wrapping undone, and its exit status.
testing::CommandResult configure(const testing::TempDir& dir, const std::string& args,
                                 const std::string& env = "") {
  auto r = testing::run_command(env + " cmake -S " TB_SOURCE_DIR " -B " + (dir / "build") +
                                " -G Ninja " + args);
  r.output = std::regex_replace(r.output, std::regex("\\s+"), " ");
  return r;
}

TEST(Configure, AMissingVirtualEnvironmentNamesTheInstallScript) {
  testing::TempDir dir;
  const auto r = configure(dir, "-DTB_VENV=" + (dir / "none"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("trainbench: no virtual environment at " + (dir / "none") + " (" +
                          (dir / "none") +
                          "/bin/python is missing); run "
                          "scripts/install_deps.sh"),
            std::string::npos)
      << r.output;
}

TEST(Configure, APythonWithoutTorchIsRefused) {
  testing::TempDir dir;
  write_script(dir / "python", "exit 1\n");
  const auto r = configure(dir, "-DTB_PYTHON=" + (dir / "python"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("trainbench: " + (dir / "python") +
                          " cannot import torch; run scripts/install_deps.sh"),
            std::string::npos)
      << r.output;
}

TEST(Configure, ATorchOlderThan211IsRefusedWithTheVersionAndTheRange) {
  testing::TempDir dir;
  // Answers the version query as a torch 2.10 CUDA 12.8 install would.
  write_script(dir / "python", "printf '2.10.1+cu128\\n/nowhere\\n12.8\\n1\\n'\n");
  const auto r = configure(dir, "-DTB_PYTHON=" + (dir / "python"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("trainbench: torch 2.10.1+cu128 found by " + (dir / "python") +
                          "; supported: 2.11 and later (pinned torch==2.11.*)"),
            std::string::npos)
      << r.output;
}

TEST(Configure, ACudaToolkitThatDoesNotMatchTheWheelIsRefused) {
  testing::TempDir dir;
  write_script(dir / "python", "printf '2.11.0+cu130\\n/nowhere\\n13.0\\n1\\n'\n");
  write_script(dir / "nvcc", "echo 'Cuda compilation tools, release 12.4, V12.4.99'\n");
  const auto r = configure(dir, "-DTB_PYTHON=" + (dir / "python"),
                           "env -u CUDA_HOME PATH=" + dir.path() + ":$PATH");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(
      r.output.find("trainbench: torch 2.11.0+cu130 is a CUDA 13.0 build but " + (dir / "nvcc") +
                    " is CUDA 12.4; put the CUDA 13.0 toolkit first on PATH"),
      std::string::npos)
      << r.output;
}

// A system LibTorch beside the venv's (Debian's libtorch-dev, which python3-torch pulls in, puts
// its Caffe2Config.cmake under the system prefix): the configure takes the venv's packages
// only. The stand-in refuses to be used, so a configure that picked it fails.
TEST(Configure, ASystemLibTorchBesideTheVenvIsNotPickedUp) {
  testing::TempDir dir;
  for (const char* pkg : {"Caffe2", "Torch"}) {
    const std::string d = dir / ("prefix/lib/cmake/" + std::string(pkg));
    testing::run_command("mkdir -p " + d);
    testing::write_file(
        d + "/" + pkg + "Config.cmake",
        std::string("message(FATAL_ERROR \"the system ") + pkg + " package was used\")\n");
  }
  // And its shared libraries where find_library looks before TorchConfig's PATHS (a prefix's
  // lib/, as /usr/lib/x86_64-linux-gnu holds Debian's libtorch.so and libc10.so).
  for (const char* lib : {"libtorch.so", "libc10.so", "libtorch_cpu.so", "libc10_cuda.so"}) {
    testing::write_file(dir / ("prefix/lib/" + std::string(lib)), "not a library");
  }
  const auto r =
      configure(dir, "-DCMAKE_PREFIX_PATH=" + (dir / "prefix") + " -DTB_BUILD_TESTS=OFF");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("package was used"), std::string::npos) << r.output;
  const std::string cache = testing::read_file(dir / "build/CMakeCache.txt");
  EXPECT_NE(cache.find("Caffe2_DIR:PATH=" TB_SOURCE_DIR "/.venv/"), std::string::npos)
      << cache.substr(cache.find("Caffe2_DIR"), 200);
  for (const std::string var : {"TORCH_LIBRARY", "c10_LIBRARY"}) {
    const size_t at = cache.find("\n" + var + ":FILEPATH=");
    ASSERT_NE(at, std::string::npos) << var;
    const std::string line = cache.substr(at + 1, cache.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find("/.venv/"), std::string::npos) << line;
    EXPECT_EQ(line.find(dir / "prefix"), std::string::npos) << line;
  }
}

// A LibTorch library the venv's torch lacks, found in the system's folders instead, stops the
// configure in one line naming it. The stand-in torch (its python answers with a tree holding
// a TorchConfig.cmake that looks up c10_cuda, as a CUDA wheel's does) has no libc10_cuda.so.
TEST(Configure, ALibTorchLibraryFromOutsideTheVenvIsRefusedNamingIt) {
  testing::TempDir dir;
  const std::string torch = dir / "torch";
  testing::run_command("mkdir -p " + torch + "/share/cmake/Torch " + torch +
                       "/share/cmake/Caffe2 " + torch + "/lib " + (dir / "prefix/lib"));
  testing::write_file(torch + "/share/cmake/Torch/TorchConfig.cmake",
                      "find_library(C10_CUDA_LIBRARY c10_cuda PATHS \"" + torch +
                          "/lib\")\n"
                          "set(TORCH_LIBRARIES \"\")\nset(Torch_FOUND TRUE)\n");
  testing::write_file(torch + "/share/cmake/Caffe2/Caffe2Config.cmake", "\n");
  testing::write_file(torch + "/lib/libtorch.so", "stand-in");
  testing::write_file(dir / "prefix/lib/libc10_cuda.so", "stand-in");
  write_script(dir / "python", "printf '2.11.0\\n" + torch + "/share/cmake\\n\\n0\\n'\n");
  const auto r = configure(dir, "-DTB_PYTHON=" + (dir / "python") + " -DCMAKE_PREFIX_PATH=" +
                                    (dir / "prefix") + " -DTB_BUILD_TESTS=OFF");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("trainbench: C10_CUDA_LIBRARY is " + (dir / "prefix/lib/libc10_cuda.so") +
                          ", not a library of the venv's torch (" + torch +
                          "/lib); remove the "
                          "other LibTorch"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace trainbench
