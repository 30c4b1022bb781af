// What a call finds and leaves in the host thread's CUDA state: a CUDA
// graph captured around a shape's very first call, and an error the caller
// left pending before the call. Neither may make a correct call fail.
// The one-time host work of a shape's first call happens once per process:
// scripts/hopper-suites.sh runs CallState.* in a process of its own first
// (ctest runs every test in its own), where the first capture is cold.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "captured_graph.hpp"
#include "device_problem.hpp"
#include "harness.hpp"
#include "require_gpu.hpp"

namespace dhp::testing {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

// An error left pending by the caller (a failed cudaMalloc: recorded as the
// thread's last error, not sticky) is neither this call's failure nor lost:
// the call succeeds, is right, and the record still holds the caller's error
// after it. The shapes: launches that went through <<<>>> + cudaGetLastError
// before session 52 (the V copy or scrub for secret key lengths; the
// portable kernel elsewhere), and first calls of kernels whose one-time
// attribute setting used cudaFuncSetAttribute, which resets the record
// (session 53; now kernels::set_function_attribute): the shared-memory cap
// (every shape) and the carveout of the narrow D = 64 decode kernel with two
// CTAs per SM (S_q 1, D 64). Defined first in this file so that in a process
// of its own (hopper-suites.sh) these calls are the first.
TEST(CallState, ErrorPendingBeforeTheCallIsLeftPending) {
  DHP_REQUIRE_GPU();
  const Problem kShapesWithLengths[] = {
      {2, 1, 2100, 8, 2, 128, false, {}, {}, {}, {}},
      {2, 1, 2100, 8, 2, 64, false, {}, {}, {}, {}},  // the narrow D = 64 kernel: its carveout
      {2, 150, 411, 4, 4, 64, true, {}, {}, {}, {}},
      {1, 300, 700, 2, 2, 256, false, {}, {}, {}, {}},
  };
  for (Problem p : kShapesWithLengths) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE("D " + std::to_string(p.D) + " S_q " + std::to_string(p.Sq) + ", seed " + std::to_string(seed));
    ASSERT_NO_FATAL_FAILURE(make_problem(p, seed));
    const Params a = params_of(p, nullptr);
    CUDA_OK(cudaMemset(p.o, 0xff, p.nq() * 2));  // poison: 0xffff is a NaN
    void* huge = nullptr;
    ASSERT_EQ(cudaMalloc(&huge, size_t{1} << 60), cudaErrorMemoryAllocation) << "1 EiB: must fail";
    const Status s = attention_forward(a);
    const cudaError_t left = cudaGetLastError();  // read and cleared before any assertion
    ASSERT_TRUE(s) << s.message;
    EXPECT_EQ(left, cudaErrorMemoryAllocation) << "the caller's pending error after the call: " << cudaGetErrorName(left);
    CUDA_OK(cudaDeviceSynchronize());
    expect_output_matches_reference(p);
    free_problem(p);
  }
}

// A CUDA graph captured around a shape's first call in this process (shapes
// no other test uses, so the one-time host work -- scratch pool, kernel
// attributes, schedule lists -- happens inside the capture): the capture holds, the
// replay is right, and a direct call after it works. With a deadline first
// (the form that failed: in session 52's run of the deadline tests alone, the
// graph test came first and its capture was invalidated; the fix is
// RelaxedCaptureMode in src/api/forward.cpp), then without. In a fresh
// process the first capture also creates the scratch pool.
TEST(CallState, GraphCapturesAShapesFirstCall) {
  DHP_REQUIRE_GPU();
  const Problem kColdShapes[] = {
      {2, 1, 1999, 12, 4, 128, false, {}, {}, {}, {}},
      {1, 77, 333, 6, 3, 64, true, {}, {}, {}, {}},
      // Causal with more tiles than a grid's CTAs: the launcher considers
      // the balanced schedule's lists, built and uploaded inside the capture
      // where taken (hopper-suites.sh also runs these tests with
      // DHP_SM90_SCHEDULE_TABLE=2, the lists wherever considered).
      {1, 512, 512, 64, 16, 64, true, {}, {}, {}, {}},
  };
  for (int with_deadline = 1; with_deadline >= 0; --with_deadline) {
    for (Problem p : kColdShapes) {
      p.Sk += with_deadline;  // a shape of its own in each pass
      const uint64_t seed = fresh_seed();
      SCOPED_TRACE("D " + std::to_string(p.D) + " S_q " + std::to_string(p.Sq) + " deadline " +
                   std::to_string(with_deadline) + ", seed " + std::to_string(seed));
      ASSERT_NO_FATAL_FAILURE(make_problem(p, seed));
      cudaStream_t stream;
      CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      dhp_deadline_state* state = new_state();
      ASSERT_NE(state, nullptr);
      Params a = params_of(p, stream);
      if (with_deadline) {
        a.time_budget_ns = 2'000'000;
        a.deadline_state = state;
      }
      CUDA_OK(cudaMemset(p.o, 0xff, p.nq() * 2));
      {
        const CapturedGraph graph(stream, [&] { return attention_forward(a); });
        ASSERT_EQ(graph.error(), "");
        CUDA_OK(graph.launch(stream));
        CUDA_OK(cudaStreamSynchronize(stream));
      }
      expect_output_matches_reference(p);
      CUDA_OK(cudaMemset(p.o, 0xff, p.nq() * 2));
      ASSERT_TRUE(attention_forward(a)) << "the direct call after the capture";
      CUDA_OK(cudaStreamSynchronize(stream));
      expect_output_matches_reference(p);
      cudaFree(state);
      cudaStreamDestroy(stream);
      free_problem(p);
    }
  }
}

}  // namespace
}  // namespace dhp::testing
