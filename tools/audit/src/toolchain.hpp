// Getting SASS out of a file: cubins are disassembled directly; objects,
// fatbinaries, shared libraries and executables go through
// `cuobjdump -xelf all` first. The disassembler is `nvdisasm -c -gi`.
//
// Tools are found, in order: $DHP_AUDIT_NVDISASM / $DHP_AUDIT_CUOBJDUMP, the
// paths CMake found at configure time (CUDA toolkit, or NVIDIA's
// nvidia-cuda-nvdisasm / nvidia-cuda-cuobjdump wheels), then $PATH.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace dhp::audit {

struct AuditError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Cubin {
  std::string label;  // e.g. "libdhp_attention.so: instantiate_fp16_d64.sm_90a.cubin"
  std::string sass;   // nvdisasm text
};

// Disassembles every cubin in `path`. Throws AuditError when the file cannot
// be read or holds no SASS.
std::vector<Cubin> disassemble_file(const std::string& path);

std::string find_tool(const char* env_var, const char* configured, const char* name);

}  // namespace dhp::audit
