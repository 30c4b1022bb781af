// The constant-time analysis of one kernel: control-flow graph (subroutines
// included), information flow to a fixpoint over R, UR, P and UP registers
// and the thread's stack slots, and the four rules:
//   (a) control   : a branch, call, return, exit, ... whose guard, condition
//                   or target is secret;
//   (b) memory    : a memory access whose address (or guard) is secret;
//   (c) side-effect: any other instruction with effects beyond registers
//                   under a secret guard;
//   (d) variable-time: a call into a variable-time routine (IEEE division /
//                   square-root slow paths) or into a routine outside the
//                   kernel (CALL.ABS: vprintf, malloc, free), whatever its guard.
// Public: kernel parameters and driver / compiler constants (constant banks
// 0, 2, 4), special registers, immediates. Secret: every value loaded from
// memory, user __constant__ data (bank 3) included, unless the address
// derives from a pointer parameter declared public for the kernel.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sass.hpp"

namespace dhp::audit {

struct ChainStep {
  uint32_t offset = 0;
  std::string sass;
  std::vector<SourceLoc> loc;
};

struct Finding {
  uint32_t offset = 0;
  std::string sass;
  char rule = '?';       // 'a' .. 'd'
  std::string reason;    // e.g. "branch guard P0 is secret"
  std::vector<SourceLoc> loc;
  std::vector<ChainStep> chain;  // from the secret's source to this instruction
};

const char* rule_name(char rule);

struct KernelReport {
  std::string name;
  std::string arch;
  size_t instructions = 0;
  size_t reachable = 0;
  std::vector<Finding> findings;
};

// Byte offsets, within the kernel's parameter block, of 8-byte pointer
// parameters whose pointees are public for this kernel.
struct PublicPointers {
  std::vector<int64_t> param_offsets;
};

KernelReport audit_kernel(const Kernel& kernel, const Module& module, const PublicPointers& pub);

// Where the parameter block and the stack pointer live in constant bank 0.
int64_t param_base(int sm);
int64_t stack_pointer_offset(int sm);

}  // namespace dhp::audit
