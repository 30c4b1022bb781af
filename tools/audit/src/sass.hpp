// SASS as dhp-audit sees it: the text nvdisasm prints (`nvdisasm -c -gi`),
// parsed into kernels, subroutines, labels, instructions and operands.
//
// Only the parts the constant-time analysis needs are modelled: which
// registers an operand names, whether it is a memory or constant-bank
// reference, branch targets, and the source location nvdisasm attributes to
// each instruction (innermost first, then the call sites it was inlined at).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dhp::audit {

// Register files the taint analysis tracks. Zero registers (RZ = R255,
// URZ = UR63, PT = P7, UPT = UP7) read as constants and discard writes.
enum class RegFile : uint8_t { R, UR, P, UP };

struct RegRef {
  RegFile file = RegFile::R;
  uint16_t index = 0;
  uint8_t width = 1;  // consecutive registers named (R2.64 -> 2)
  bool is_zero() const;
  std::string name() const;
};

enum class OperandKind : uint8_t {
  Register,   // R/UR/P/UP, with modifiers (-R2, |R3|, !P0, R4.reuse, R2.64)
  PredGroup,  // PR / UPR: every predicate at once (P2R / R2P)
  Memory,     // [R2.64+0x10], desc[UR4][R2.64], gdesc[UR4] ...
  Constant,   // c[bank][offset] or c[bank][Rx+imm]
  Immediate,  // 0x10, 1.5, +INF, -QNAN
  Target,     // `(.L_x_3) : a label or a function symbol
  Special,    // SR_TID.X, SRZ, ...
  Other,      // barrier registers B0, scoreboards SB0, gsb0, ...
};

struct Operand {
  std::string text;
  OperandKind kind = OperandKind::Other;
  bool negated = false;          // !P0
  std::vector<RegRef> regs;      // registers the operand names
  std::vector<RegRef> desc_regs; // desc[URx] (URx:URx+1) / gdesc[URx] (4 registers) descriptors
  int const_bank = -1;           // Constant: bank
  int64_t const_offset = -1;     // Constant: immediate offset (or imm part)
  bool const_indexed = false;    // Constant: indexed by a register
  int64_t mem_imm = 0;           // Memory: immediate displacement
  std::string target;            // Target: label / symbol name
};

struct SourceLoc {
  std::string file;
  int line = 0;
};

struct Instruction {
  uint32_t offset = 0;    // byte offset in the kernel's .text section
  std::string text;       // as printed, without the offset and the ';'
  bool guarded = false;   // has an @P / @!P / @UP guard
  RegRef guard;
  bool guard_negated = false;
  std::string opcode;     // full opcode with modifiers, e.g. LDG.E.128
  std::string base;       // opcode before the first '.', e.g. LDG
  std::vector<std::string> mods;
  std::vector<Operand> ops;
  std::vector<SourceLoc> loc;  // innermost first, then inlined-at sites
};

// A function symbol inside a kernel's .text section: the kernel itself and
// the out-of-line subroutines (e.g. IEEE division slow paths) after it.
struct Function {
  std::string name;
  size_t first = 0;  // index of its first instruction
};

struct Kernel {
  std::string name;  // mangled symbol
  std::vector<Instruction> code;
  std::map<std::string, size_t> labels;  // label / symbol -> instruction index
  std::vector<Function> functions;       // sorted by first; [0] is the kernel
};

struct Module {
  std::string arch;  // e.g. sm_90a
  int sm = 0;        // e.g. 90
  std::vector<Kernel> kernels;
};

// Parses `nvdisasm -c -gi` output. Throws std::runtime_error on text it
// cannot read as SASS.
Module parse_nvdisasm(const std::string& text);

// Parses one instruction's text after the offset ("@!P0 BRA `(.L_x_3)").
Instruction parse_instruction(const std::string& text);

// Parses one operand; exposed for the unit tests.
Operand parse_operand(const std::string& text);

// "0x20", "-0x20", "12": an immediate's value.
int64_t parse_integer(const std::string& text);

}  // namespace dhp::audit
