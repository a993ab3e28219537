// Precompiled header for the LibTorch-heavy translation units (see CMakeLists.txt).
#pragma once

#include <torch/torch.h>
