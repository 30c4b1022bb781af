// What a SASS instruction does, as far as constant-time analysis cares:
// which registers it writes and reads, which registers form a memory
// address, whether it transfers control, and where its results come from.
//
// The tables are conservative where they must be: an opcode not known to be
// register-only is treated as having side effects, a load is a secret source,
// and a write of uncertain width is a weak update (joined with the old
// value). Widths of known wide results (LDG.128, IMAD.WIDE, HMMA, HGMMA,
// LDSM.x4 ...) are exact so that writes of public values can clear taint.
#pragma once

#include <string>
#include <vector>

#include "sass.hpp"

namespace dhp::audit {

enum class Control : uint8_t {
  None,
  Branch,        // BRA / JMP to a label (conditional when guarded or with a
                 // predicate operand)
  Indirect,      // BRX / JMX: target from a register
  Call,          // CALL to a function symbol (or a label: then a branch)
  Return,        // RET
  Exit,          // EXIT / KILL / BPT.TRAP
  Other,         // BSSY, BSYNC, BREAK, WARPSYNC, BPT (not .TRAP), YIELD, NANOSLEEP
};

enum class Source : uint8_t {
  Computed,   // result from the operands (ALU, moves, shuffles, votes, MMA)
  Load,       // memory read: secret unless the address is a declared public pointer
  LocalLoad,  // LDL: tracked per stack slot when the address is [R1+imm]
  Constant,   // LDC / ULDC: parameters and driver constants, public
  Public,     // S2R, CS2R, ELECT, mbarrier phase results: not data-dependent
};

struct Semantics {
  std::vector<RegRef> defs;        // registers written
  bool weak_defs = false;          // defs of uncertain extent: join, do not replace
  std::vector<RegRef> uses;        // registers read as data
  std::vector<RegRef> addr;        // registers forming a memory address or
                                   // another operand that must be public
  std::vector<RegRef> cond;        // predicate operands of a control transfer
  Source source = Source::Computed;
  Control control = Control::None;
  bool memory = false;             // touches memory (rule b applies)
  bool register_only = false;      // no effect beyond its registers (rule c exempt)
  bool store_local = false;        // STL
  bool secret_const = false;       // reads constant data the host wrote (bank 3:
                                   // user __constant__), which is secret
  bool generic_store = false;      // ST / ATOM / RED: a generic address, which
                                   // may point into the thread's stack
  std::string target;              // Branch / Call: label or symbol
  std::vector<RegRef> store_data;  // STL: registers stored
  int local_bytes = 4;             // LDL/STL access size
  bool local_partial = false;      // STL.U8 / .U16: writes part of a 4-byte slot
};

// True when ins carries modifier m (CALL.ABS: "ABS"; STL.U16: "U16").
bool has_mod(const Instruction& ins, const char* m);
// A predicate register operand (P / UP), a general one (R / UR).
bool is_pred(const Operand& o);
bool is_gpr(const Operand& o);

Semantics semantics_of(const Instruction& ins);

// Texture and surface instructions (isa_image.cpp): fills s and returns true
// when ins is one, else returns false and leaves s alone.
bool image_semantics(const Instruction& ins, Semantics& s);

// True when a CALL's callee is a variable-time library routine: the IEEE
// division / reciprocal / square-root slow paths nvcc emits out of line.
bool is_variable_time_routine(const std::string& callee);

}  // namespace dhp::audit
