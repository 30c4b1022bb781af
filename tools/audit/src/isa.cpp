// Opcode tables and operand roles for semantics_of(). See isa.hpp.
#include "isa.hpp"

#include <algorithm>
#include <cctype>
#include <set>

namespace dhp::audit {
namespace {

using Set = std::set<std::string>;

// Opcodes whose only effect is on registers. A secret guard on these is fine
// (predicated arithmetic is a select). Anything not listed, not a memory
// operation and not a control transfer is treated as having side effects.
const Set kRegisterOnly = {
    "IADD3", "UIADD3", "IADD", "UIADD", "IADD32I", "VIADD", "VIADDMNMX", "IMAD", "UIMAD", "IMUL",
    "IMUL32I", "IMAD32I", "LEA", "ULEA", "LOP3", "ULOP3", "LOP", "LOP32I", "PLOP3", "UPLOP3",
    "SHF", "USHF", "SHL", "SHR", "ISETP", "UISETP", "FSETP", "UFSETP", "DSETP", "HSETP2", "PSETP",
    "FSEL", "SEL", "USEL", "UFSEL", "FMNMX", "UFMNMX", "IMNMX", "UIMNMX", "VIMNMX", "VIMNMX3",
    "HMNMX2", "FMNMX3", "FADD", "FMUL", "FFMA", "FADD32I", "FMUL32I", "FFMA32I", "FADD2", "FMUL2",
    "FFMA2", "UFADD", "UFMUL", "UFFMA", "HADD2", "HMUL2", "HFMA2", "HADD2_32I", "HMUL2_32I",
    "HFMA2_32I", "DADD", "DMUL", "DFMA", "DMNMX", "MUFU", "MOV", "UMOV", "MOV32I", "PRMT",
    "UPRMT", "BFE", "BFI", "BMSK", "UBMSK", "SGXT", "USGXT", "FLO", "UFLO", "POPC", "UPOPC",
    "BREV", "UBREV", "IABS", "I2F", "F2I", "F2F", "I2I", "FRND", "F2FP", "I2FP", "F2IP", "UF2FP",
    "S2R", "S2UR", "CS2R", "R2UR", "R2P", "P2R", "UP2UR", "UR2UP", "FCHK", "IDP", "HMMA", "IMMA",
    "DMMA", "BMMA", "SHFL", "VOTE", "VOTEU", "MATCH", "REDUX", "ELECT", "LEPC", "ISCADD",
    "FSWZADD", "NOP", "CSET", "CSETP", "ISAD", "IDE", "BMOV", "MOVM", "UI2F", "UF2I",
    "U2UR", "HSET2", "FSET", "ISET", "DSET", "UIABS", "UVIADD", "UVIMNMX",
};

// Memory reads whose result is data (secret unless the address is a
// declared public pointer).
// Texture and surface instructions are in isa_image.cpp.
const Set kLoads = {"LD", "LDG", "LDS", "LDSM", "ATOM", "ATOMG", "ATOMS", "LDTRAM", "LDT"};
// Memory writes (and reductions without a result).
const Set kStores = {"ST", "STG", "STS", "STL", "STSM", "RED", "REDG", "REDS"};
// Asynchronous copies, TMA, mbarrier and cache operations: every register
// operand is an address, a coordinate, a size or a count and must be public.
const Set kAsync = {"LDGSTS", "UTMALDG", "UTMASTG", "UTMAPF", "UTMACCTL", "UTMAREDG", "UBLKCP",
                    "UBLKRED", "UBLKPF", "ARRIVES", "SYNCS", "CCTL", "UCCTL", "LDGDEPBAR",
                    "UTMACMDFLUSH", "FENCE"};
// Warpgroup MMA: reads shared memory through descriptors; results are data.
const Set kGroupMma = {"HGMMA", "IGMMA", "QGMMA", "BGMMA", "OMMA", "UTCHMMA", "UTCQMMA"};
const Set kConstLoads = {"LDC", "ULDC", "LDCU"};
const Set kPublicResult = {"S2R", "S2UR", "CS2R", "ELECT", "LEPC", "SYNCS", "GETLMEMBASE"};

// Compare-like opcodes that write two predicates first.
const Set kTwoPredDefs = {"ISETP", "UISETP", "FSETP", "UFSETP", "DSETP", "HSETP2", "PLOP3",
                          "UPLOP3", "PSETP", "CSETP"};
// Opcodes that write a register right after a leading predicate result.
// R2UR P0, UR6, R2 (sm_90's waterfall loops: P0 says whether R2 was uniform)
// writes UR6 too; without it here UR6 kept its old taint.
const Set kRegAfterPred = {"LOP3", "ULOP3", "SHFL", "ATOM", "ATOMG", "ATOMS", "ELECT", "MATCH", "R2UR"};
// Opcodes whose operands after the leading predicate result are all sources.
const Set kPredThenSources = {"FCHK"};
// Opcodes with carry-out predicates directly after the register result.
const Set kCarryOut = {"IADD3", "UIADD3", "LEA", "ULEA", "IADD", "UIADD", "IMAD", "UIMAD"};

// Number of 32-bit registers moved by a memory access (.64 / .128).
uint8_t access_regs(const Instruction& ins) {
  if (has_mod(ins, "128")) return 4;
  if (has_mod(ins, "64")) return 2;
  if (ins.base == "LDSM" || ins.base == "STSM" || ins.base == "MOVM") {
    const std::string& last = ins.mods.empty() ? std::string() : ins.mods.back();
    if (last == "4") return 4;
    if (last == "2") return 2;
  }
  return 1;
}

// Conversions: the register widths of the result and of the source. The
// type modifiers are not "destination, then source": nvdisasm prints the
// float type of I2F and the integer type of F2I first and omits 32-bit
// defaults, so I2F.S64 is f32 <- s64 (reads a pair, writes one register)
// and F2I.F64 is s32 <- f64. F2F / I2I / FRND list destination then source;
// with one type it is both (FRND.F64).
struct ConvWidths {
  uint8_t dst = 1, src = 1;
};

bool is_conversion(const std::string& b) {
  return b == "I2F" || b == "F2I" || b == "F2F" || b == "I2I" || b == "FRND" || b == "UI2F" || b == "UF2I" ||
         b == "UF2F" || b == "UFRND";
}

ConvWidths conversion_widths(const Instruction& ins) {
  auto is_type = [](const std::string& m) {
    return m.size() >= 2 && (m[0] == 'F' || m[0] == 'S' || m[0] == 'U') &&
           std::all_of(m.begin() + 1, m.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  auto regs = [](const std::string& m) -> uint8_t { return m.size() >= 3 && m.substr(m.size() - 2) == "64" ? 2 : 1; };
  std::vector<std::string> fl, in, all;
  for (auto& m : ins.mods)
    if (is_type(m)) {
      all.push_back(m);
      (m[0] == 'F' ? fl : in).push_back(m);
    }
  ConvWidths w;
  const std::string& b = ins.base;
  if (b == "I2F" || b == "UI2F") {
    if (!fl.empty()) w.dst = regs(fl[0]);
    if (!in.empty()) w.src = regs(in[0]);
  } else if (b == "F2I" || b == "UF2I") {
    if (!in.empty()) w.dst = regs(in[0]);
    if (!fl.empty()) w.src = regs(fl[0]);
  } else if (!all.empty()) {
    w.dst = regs(all[0]);
    w.src = regs(all.size() > 1 ? all[1] : all[0]);
  }
  return w;
}

// Width of the register result.
uint8_t def_width(const Instruction& ins) {
  const std::string& b = ins.base;
  if (kLoads.count(b) || b == "LDL" || kConstLoads.count(b)) return access_regs(ins);
  if (b == "HMMA" || b == "IMMA" || b == "DMMA" || b == "BMMA") {
    if (b == "DMMA") return 2;
    bool small = !ins.mods.empty() && (ins.mods[0] == "884" || ins.mods[0] == "8816" || ins.mods[0] == "8832");
    bool f16 = ins.mods.size() > 1 && ins.mods[1] == "F16";
    return (small || f16) ? 2 : 4;
  }
  if (kGroupMma.count(b)) {
    // HGMMA.64xNx16.F32... : 64xN fp32 accumulators over 128 threads.
    if (!ins.mods.empty()) {
      const std::string& shape = ins.mods[0];
      size_t x1 = shape.find('x'), x2 = shape.find('x', x1 + 1);
      if (x1 != std::string::npos && x2 != std::string::npos) {
        int n = std::stoi(shape.substr(x1 + 1, x2 - x1 - 1));
        bool wide = has_mod(ins, "F32") || has_mod(ins, "S32");
        return static_cast<uint8_t>(wide ? n / 2 : n / 4);
      }
    }
    return 255;  // unknown: treated as a weak write of many registers
  }
  if (has_mod(ins, "WIDE")) return 2;
  if (has_mod(ins, "128")) return 4;
  if (has_mod(ins, "64")) return 2;
  if (b == "DADD" || b == "DMUL" || b == "DFMA" || b == "DMNMX" || b == "LEPC") return 2;
  if (b == "CS2R") return has_mod(ins, "32") ? 1 : 2;
  if (is_conversion(b)) return conversion_widths(ins).dst;
  return 1;
}

// Width of a register source operand at position `pos` (0-based over all
// operands). Over-approximating a source is safe: it can only add taint.
uint8_t src_width(const Instruction& ins, size_t pos, size_t first_src) {
  const std::string& b = ins.base;
  if (b == "HMMA" || b == "IMMA" || b == "DMMA" || b == "BMMA") {
    size_t k = pos - first_src;
    return k == 0 ? 4 : k == 1 ? 2 : def_width(ins);
  }
  if (kGroupMma.count(b)) return pos == first_src ? 4 : def_width(ins);
  if (kStores.count(b) || b == "ATOM" || b == "ATOMG" || b == "ATOMS" || b == "STL")
    return access_regs(ins);
  if (has_mod(ins, "WIDE")) return pos - first_src == 2 ? 2 : 1;
  if (has_mod(ins, "64") || has_mod(ins, "128")) return has_mod(ins, "128") ? 4 : 2;
  if (b == "DADD" || b == "DMUL" || b == "DFMA" || b == "DMNMX" || b == "DSETP") return 2;
  if (is_conversion(b)) return conversion_widths(ins).src;
  return 1;
}

Control control_of(const std::string& b) {
  if (b == "BRA" || b == "JMP") return Control::Branch;
  if (b == "BRX" || b == "JMX") return Control::Indirect;
  if (b == "CALL") return Control::Call;
  if (b == "RET") return Control::Return;
  if (b == "EXIT" || b == "KILL") return Control::Exit;
  if (b == "BSSY" || b == "BSYNC" || b == "BREAK" || b == "WARPSYNC" || b == "BPT" ||
      b == "YIELD" || b == "NANOSLEEP" || b == "RTT" || b == "BAR" || b == "UCGABAR_ARV" ||
      b == "UCGABAR_WAIT" || b == "MEMBAR" || b == "ERRBAR" || b == "DEPBAR" ||
      b == "WARPGROUP" || b == "USETMAXREG" || b == "SETMAXREG" || b == "ACQBULK" ||
      b == "PMTRIG")
    return Control::Other;  // (CCTL, a cache operation at an address, is memory: rule b)
  return Control::None;
}

}  // namespace

bool has_mod(const Instruction& ins, const char* m) {
  for (auto& x : ins.mods)
    if (x == m) return true;
  return false;
}
bool is_pred(const Operand& o) {
  return o.kind == OperandKind::Register &&
         (o.regs[0].file == RegFile::P || o.regs[0].file == RegFile::UP);
}
bool is_gpr(const Operand& o) {
  return o.kind == OperandKind::Register &&
         (o.regs[0].file == RegFile::R || o.regs[0].file == RegFile::UR);
}

bool is_variable_time_routine(const std::string& callee) {
  // nvcc's out-of-line math helpers: __internal_N_$__cuda_sm3x_div_rn_...,
  // __cuda_sm20_sqrt_rn_f32_slowpath, __cuda_sm20_dsqrt_rn_f64_mediumpath...
  return callee.find("__cuda_sm") != std::string::npos ||
         callee.find("slowpath") != std::string::npos ||
         callee.find("mediumpath") != std::string::npos;
}

// The immediate mask of R2P / P2R (last operand), or -1 if it is not one.
static int64_t pred_mask(const std::vector<Operand>& ops) {
  if (ops.empty() || ops.back().kind != OperandKind::Immediate) return -1;
  try {
    const int64_t m = parse_integer(ops.back().text);
    return m >= 0 && m < 128 ? m : -1;
  } catch (...) {
    return -1;
  }
}


Semantics semantics_of(const Instruction& ins) {
  Semantics s;
  const std::string& b = ins.base;
  const auto& ops = ins.ops;
  const size_t n = ops.size();
  s.control = control_of(b);
  if (image_semantics(ins, s)) return s;
  // BPT.TRAP aborts the kernel (PTX trap): no successor, like EXIT. Other
  // BPT forms (BPT.INT, PTX brkpt) may resume and fall through.
  if (b == "BPT" && has_mod(ins, "TRAP")) s.control = Control::Exit;
  if (kLoads.count(b) || kGroupMma.count(b)) s.source = Source::Load;
  else if (b == "LDL") s.source = Source::LocalLoad;
  else if (kConstLoads.count(b)) s.source = Source::Constant;
  else if (kPublicResult.count(b)) s.source = Source::Public;
  s.memory = kLoads.count(b) || kStores.count(b) || kAsync.count(b) || kGroupMma.count(b) || kConstLoads.count(b) ||
             b == "LDL" || b == "STL";
  for (auto& o : ops)
    if (o.kind == OperandKind::Memory || (o.kind == OperandKind::Constant && o.const_indexed))
      s.memory = true;
  // Constant banks: 0 holds the parameters and driver constants, 2 and 4
  // compiler-made constants and relocated addresses (e.g. vprintf's): all
  // public. Bank 3 is user __constant__ memory (nvcc 13, sm_80 and sm_90a):
  // data the host wrote, as secret as global memory. Any other bank, or one
  // chosen by a register (cx[URx]), is unknown: secret.
  for (auto& o : ops)
    if (o.kind == OperandKind::Constant &&
        (o.text.find("cx[") != std::string::npos || (o.const_bank != 0 && o.const_bank != 2 && o.const_bank != 4)))
      s.secret_const = true;
  s.register_only = !s.memory && s.control == Control::None && kRegisterOnly.count(b);
  s.store_local = b == "STL";
  s.generic_store = b == "ST" || b == "ATOM" || b == "RED";
  if (b == "LDL" || b == "STL") s.local_bytes = 4 * access_regs(ins);
  s.local_partial = b == "STL" && (has_mod(ins, "U8") || has_mod(ins, "S8") || has_mod(ins, "U16") ||
                                   has_mod(ins, "S16"));

  // Control transfers: predicate operands are conditions, register operands
  // (BRX/JMX/RET targets, WARPSYNC masks, barrier ids and counts, sleep
  // times) must be public, and nothing is written.
  if (s.control != Control::None) {
    for (auto& o : ops) {
      if (o.kind == OperandKind::Target && s.target.empty()) s.target = o.target;
      if (is_pred(o)) s.cond.push_back(o.regs[0]);
      else if (o.kind == OperandKind::Register || o.kind == OperandKind::Memory)
        for (auto& r : o.regs) s.addr.push_back(r);
      for (auto& r : o.desc_regs) s.addr.push_back(r);
    }
    return s;
  }

  std::vector<bool> is_def(n, false);
  size_t first_src = 0;
  if (b == "VOTE" || b == "VOTEU") {
    for (size_t i = 0; i + 1 < n; ++i) is_def[i] = ops[i].kind == OperandKind::Register;
    first_src = n ? n - 1 : 0;
  } else if (b == "R2P" || b == "UR2UP") {
    // R2P PR, R0, mask: predicate i := bit i of R0 for each bit i set in the
    // mask (an immediate); the others keep their values. An unreadable mask
    // writes all seven, joined with their old values (weak).
    const RegFile f = b == "R2P" ? RegFile::P : RegFile::UP;
    const int64_t mask = pred_mask(ops);
    if (mask < 0) s.weak_defs = true;
    for (uint16_t p = 0; p < 7; ++p)
      if (mask < 0 || (mask >> p) & 1) s.defs.push_back({f, p, 1});
    for (size_t i = 1; i + 1 < n; ++i)  // the source register (PR itself is not read)
      for (auto r : ops[i].regs) s.uses.push_back(r);
    return s;
  } else if ((b == "P2R" || b == "UP2UR") && n >= 4 && ops[1].kind == OperandKind::PredGroup) {
    // P2R Rd, PR, Rs, mask: Rd := (Rs & ~mask) | (predicate bits & mask):
    // reads only the predicates the mask selects (all, if unreadable).
    const int64_t mask = pred_mask(ops);
    s.defs.push_back(ops[0].regs[0]);
    for (auto r : ops[1].regs)
      if (mask < 0 || (mask >> r.index) & 1) s.uses.push_back(r);
    for (size_t i = 2; i + 1 < n; ++i)
      for (auto r : ops[i].regs) s.uses.push_back(r);
    return s;
  } else {
    size_t i = 0;
    bool lead_pred = false;
    if (i < n && is_pred(ops[i])) {
      is_def[i++] = true;
      lead_pred = true;
      if (i < n && is_pred(ops[i]) && kTwoPredDefs.count(b)) is_def[i++] = true;
    }
    bool writes_reg = lead_pred ? kRegAfterPred.count(b) > 0 : true;
    if (kStores.count(b) || kAsync.count(b)) writes_reg = writes_reg && lead_pred;
    if (writes_reg && i < n && is_gpr(ops[i])) {
      is_def[i++] = true;
      if (kCarryOut.count(b))
        while (i < n && is_pred(ops[i])) is_def[i++] = true;
    } else if (lead_pred && i < n && is_gpr(ops[i]) && !kTwoPredDefs.count(b) && !kPredThenSources.count(b) &&
               !kStores.count(b) && !kAsync.count(b) && !kLoads.count(b) && b != "LDL") {
      // An opcode in neither table with a predicate result, then a register:
      // the register may be a second result. Read it as a source and also
      // write it weakly (joined with its old value): that can only add taint.
      RegRef r = ops[i].regs[0];
      s.defs.push_back(r);
      s.weak_defs = true;
    }
    first_src = i;
  }

  const uint8_t dw = def_width(ins);
  for (size_t i = 0; i < n; ++i) {
    const Operand& o = ops[i];
    if (is_def[i]) {
      RegRef r = o.regs[0];
      if (r.file == RegFile::R || r.file == RegFile::UR) {
        if (dw == 255) { r.width = 1; s.weak_defs = true; }
        else r.width = dw;
      }
      s.defs.push_back(r);
      continue;
    }
    switch (o.kind) {
      case OperandKind::Memory:
        for (auto r : o.regs) {
          // TMA / bulk copies name a group of uniform registers by its first:
          // UTMALDG.2D [UR12], [UR4] reads UR12 (shared address), UR13
          // (mbarrier), UR14.. (one coordinate per dimension) and the 64-bit
          // tensor-map address UR4:UR5.
          if (b.rfind("UTMA", 0) == 0 || b.rfind("UBLK", 0) == 0) {
            uint8_t w = 2;
            if (&o == &ops[0] || (ops[0].kind != OperandKind::Memory && &o == &ops[1]))
              for (auto& m : ins.mods)
                if (m.size() == 2 && m[1] == 'D' && m[0] >= '1' && m[0] <= '5') w = static_cast<uint8_t>(2 + (m[0] - '0'));
            r.width = std::max(r.width, w);
          }
          s.addr.push_back(r);
        }
        for (auto& r : o.desc_regs) s.addr.push_back(r);
        break;
      case OperandKind::Constant:
        for (auto& r : o.regs) s.addr.push_back(r);  // c[bank][Rx]: an address
        break;
      case OperandKind::Register:
      case OperandKind::PredGroup: {
        bool addr_like = (kAsync.count(b) > 0) ||
                         (is_pred(o) && (kLoads.count(b) || kStores.count(b) || b == "LDL"));
        for (auto r : o.regs) {
          if (o.kind == OperandKind::Register && (r.file == RegFile::R || r.file == RegFile::UR))
            r.width = std::max<uint8_t>(r.width, src_width(ins, i, first_src));
          if (b == "STL" && !addr_like) s.store_data.push_back(r);
          (addr_like ? s.addr : s.uses).push_back(r);
        }
        break;
      }
      default:
        break;
    }
  }
  return s;
}

}  // namespace dhp::audit
