// One call captured from a stream into an instantiated CUDA graph -- the call
// as a graph user makes it -- and destroyed with this object. Shared by the
// GPU tests (test_graph.cpp, test_deadline.cpp) and dhp_validate --graph.
#pragma once
#include <cuda_runtime.h>

#include <string>
#include <utility>
#include <vector>

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
    else
      list_kernel_shapes(graph);
    if (graph != nullptr) cudaGraphDestroy(graph);
  }
  ~CapturedGraph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;

  const std::string& error() const { return error_; }  // empty: captured and instantiated
  // The captured kernels as (blocks, threads per block), in no particular
  // order: what the call enqueues, without running it.
  const std::vector<std::pair<unsigned, unsigned>>& kernel_shapes() const { return kernel_shapes_; }
  cudaError_t launch(cudaStream_t stream) const {
    return exec_ != nullptr ? cudaGraphLaunch(exec_, stream) : cudaErrorInvalidValue;
  }

 private:
  void list_kernel_shapes(cudaGraph_t graph) {
    size_t n = 0;
    if (cudaGraphGetNodes(graph, nullptr, &n) != cudaSuccess) return;
    std::vector<cudaGraphNode_t> nodes(n);
    if (cudaGraphGetNodes(graph, nodes.data(), &n) != cudaSuccess) return;
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type;
      cudaKernelNodeParams kp{};
      if (cudaGraphNodeGetType(node, &type) == cudaSuccess && type == cudaGraphNodeTypeKernel &&
          cudaGraphKernelNodeGetParams(node, &kp) == cudaSuccess)
        kernel_shapes_.emplace_back(kp.gridDim.x * kp.gridDim.y * kp.gridDim.z,
                                    kp.blockDim.x * kp.blockDim.y * kp.blockDim.z);
    }
  }

  cudaGraphExec_t exec_ = nullptr;
  std::string error_;
  std::vector<std::pair<unsigned, unsigned>> kernel_shapes_;
};

}  // namespace dhp::testing
