// The GPU tests' guard. Without a usable CUDA device a test prints
// "skipped: no CUDA device" and is reported skipped -- unless
// DHP_REQUIRE_GPU is set (the GPU machine's scripts set it), where a missing
// device is a failure: a GPU run must never pass by skipping everything.
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>

#include "harness.hpp"

#define DHP_REQUIRE_GPU()                                                                      \
  do {                                                                                         \
    if (!::dhp::testing::cuda_device_available()) {                                            \
      if (std::getenv("DHP_REQUIRE_GPU") != nullptr)                                           \
        FAIL() << "no usable CUDA device, and DHP_REQUIRE_GPU is set";                         \
      GTEST_SKIP() << "skipped: no CUDA device";                                               \
    }                                                                                          \
  } while (0)
