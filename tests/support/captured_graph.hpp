// One call captured from a stream into an instantiated CUDA graph -- the call
// as a graph user makes it -- and destroyed with this object. Shared by the
// GPU tests (test_graph.cpp, test_deadline.cpp) and dhp_validate --graph.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "dhp/attention.hpp"

namespace dhp::testing {

class CapturedGraph {
 public:
  // enqueue() enqueues the call on `stream` and returns its Status. The
  // capture is ended whatever the call returned, so the stream is usable
  // after a failure.
  template <typename Enqueue>
  CapturedGraph(cudaStream_t stream, Enqueue&& enqueue) {
    cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
      error_ = std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(e);
      return;
    }
    const Status st = enqueue();
    cudaGraph_t graph = nullptr;
    e = cudaStreamEndCapture(stream, &graph);
    if (!st)
      error_ = "the captured call: " + st.message;
    else if (e != cudaSuccess || graph == nullptr)
      error_ = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e);
    else if ((e = cudaGraphInstantiate(&exec_, graph, 0)) != cudaSuccess)
      error_ = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e), exec_ = nullptr;
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  ~CapturedGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  const std::string& error() const { return error_; }  // empty: captured and instantiated
  cudaError_t launch(cudaStream_t stream) const {
    return exec_ != nullptr ? cudaGraphLaunch(exec_, stream) : cudaErrorInvalidValue;
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
  std::string error_;
};

}  // namespace dhp::testing
