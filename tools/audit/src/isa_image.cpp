// Texture and surface instructions for semantics_of(). See isa.hpp.
//
// Their operand lists do not follow the "destination, then sources" shape the
// generic table assumes, and the generic table got both halves wrong:
//   TEX.LL RZ, R7, R6, R2, UR4, 0x0, 2D, 0x1
//          |   |   |   |   |    `--------- texture index, dimension, mask
//          |   |   |   |   `-------------- texture handle (bindless)
//          |   |   |   `------------------ LOD / array index / gradients
//          |   |   `---------------------- coordinates
//          `---`-------------------------- two destinations (RZ: unused)
// Only RZ was taken as the destination, so the fetched texel (memory!) never
// became secret, and the coordinates, LOD and handle were read as data, so
// a secret-indexed texture fetch was not a memory finding. Surfaces put the
// coordinates in brackets, one register naming a group ([R6] is x in R6 and
// y in R7 for .2D), and the handle after the data:
//   SULD.D.BA.2D.STRONG.SM.TRAP R7, [R6], UR6, 0x0
//   SUST.D.BA.2D.STRONG.SM.TRAP [R4], R0, UR4, 0x0   (sm_80: ..., R0, 0x0, 0x58)
// Every coordinate, LOD, gradient and handle is an address (rule b); every
// texel or surface value read is secret.
#include <algorithm>
#include <bitset>
#include <set>

#include "isa.hpp"

namespace dhp::audit {
namespace {

const std::set<std::string> kTexture = {"TEX", "TLD", "TLD4", "TXD", "TMML", "TXQ", "TEXS", "TLDS", "TLD4S"};
const std::set<std::string> kSurface = {"SULD", "SUST", "SURED", "SUATOM", "SUQUERY"};


// Coordinates the dimension names (a texture operand "2D" / "ARRAY_2D", a
// surface modifier .2D / .2D_ARRAY); 4 when none is recognised.
uint8_t coordinates(const Instruction& ins) {
  auto count = [](const std::string& t) -> uint8_t {
    if (t == "1D" || t == "1D_BUFFER") return 1;
    if (t == "2D" || t == "ARRAY_1D" || t == "1D_ARRAY") return 2;
    if (t == "3D" || t == "CUBE" || t == "ARRAY_2D" || t == "2D_ARRAY") return 3;
    if (t == "ARRAY_CUBE" || t == "CUBE_ARRAY" || t == "ARRAY_3D") return 4;
    return 0;
  };
  for (auto& m : ins.mods)
    if (uint8_t c = count(m)) return c;
  for (auto& o : ins.ops)
    if (uint8_t c = count(o.text)) return c;
  return 4;
}

// Registers a surface value occupies: .64 / .128 / a 64-bit type, and four
// for the formatted (.P) forms, whose vector width is not printed.
uint8_t surface_value_regs(const Instruction& ins) {
  if (has_mod(ins, "P") || has_mod(ins, "128")) return 4;
  if (has_mod(ins, "64") || has_mod(ins, "U64") || has_mod(ins, "S64") || has_mod(ins, "F64") || has_mod(ins, "B64"))
    return has_mod(ins, "CAS") ? 4 : 2;
  return has_mod(ins, "CAS") ? 2 : 1;
}

// Components a texture fetch returns: the popcount of its trailing write
// mask; TLD4 gathers four; 4 when no mask is printed.
uint8_t texture_components(const Instruction& ins) {
  if (ins.base == "TLD4" || ins.base == "TLD4S") return 4;
  if (!ins.ops.empty() && ins.ops.back().kind == OperandKind::Immediate) {
    try {
      const int64_t m = parse_integer(ins.ops.back().text);
      if (m > 0 && m < 16) return static_cast<uint8_t>(std::bitset<4>(static_cast<unsigned long>(m)).count());
    } catch (...) {
    }
  }
  return 4;
}

void texture(const Instruction& ins, Semantics& s) {
  const auto& ops = ins.ops;
  size_t i = 0;
  while (i < ops.size() && is_pred(ops[i])) s.defs.push_back(ops[i++].regs[0]);  // sparse residency
  // Two destinations; the texel components fill the second, then the first.
  std::vector<size_t> dst;
  while (i < ops.size() && dst.size() < 2 && is_gpr(ops[i])) dst.push_back(i++);
  const uint8_t n = texture_components(ins);
  if (dst.size() == 2) {
    RegRef hi = ops[dst[0]].regs[0], lo = ops[dst[1]].regs[0];
    lo.width = hi.is_zero() ? n : std::min<uint8_t>(n, 2);
    hi.width = static_cast<uint8_t>(std::max(1, n - 2));
    s.defs.push_back(hi);
    s.defs.push_back(lo);
  } else if (dst.size() == 1) {
    RegRef d = ops[dst[0]].regs[0];
    d.width = n;
    s.defs.push_back(d);
  }
  // Everything else that names a register is where the fetch goes: the
  // coordinates (one per dimension), then LOD / array index / gradients
  // (four for TXD), and the 64-bit bindless handle (UR4:UR5, or a register
  // on sm_80's .B forms). Widths over-approximate: extra registers can only
  // add taint.
  bool first = true;
  for (; i < ops.size(); ++i) {
    if (ops[i].kind != OperandKind::Register) continue;
    RegRef r = ops[i].regs[0];
    if (r.file == RegFile::R) r.width = first ? coordinates(ins) : (ins.base == "TXD" ? 4 : 2);
    else if (r.file == RegFile::UR) r.width = 2;
    first = first && r.file != RegFile::R;
    s.addr.push_back(r);
  }
}

void surface(const Instruction& ins, Semantics& s) {
  const auto& ops = ins.ops;
  const std::string& b = ins.base;
  const bool reads = b == "SULD" || b == "SUATOM" || b == "SUQUERY";
  const uint8_t value = surface_value_regs(ins);
  size_t i = 0;
  while (i < ops.size() && is_pred(ops[i])) s.defs.push_back(ops[i++].regs[0]);
  if (reads && i < ops.size() && is_gpr(ops[i])) {
    RegRef d = ops[i++].regs[0];
    d.width = b == "SUQUERY" ? 1 : value;
    s.defs.push_back(d);
  }
  bool data_seen = b == "SULD" || b == "SUQUERY";  // these store nothing
  for (; i < ops.size(); ++i) {
    const Operand& o = ops[i];
    if (o.kind == OperandKind::Memory) {
      // [R6]: the first register names the coordinate group.
      for (size_t k = 0; k < o.regs.size(); ++k) {
        RegRef r = o.regs[k];
        if (k == 0 && r.file == RegFile::R) r.width = coordinates(ins);
        s.addr.push_back(r);
      }
      for (auto& r : o.desc_regs) s.addr.push_back(r);
    } else if (o.kind == OperandKind::Register) {
      RegRef r = o.regs[0];
      if (!data_seen && r.file == RegFile::R) {  // the value stored / combined: data
        r.width = value;
        s.uses.push_back(r);
        data_seen = true;
      } else {  // the handle (UR, or R on sm_80's .B forms), or a predicate
        s.addr.push_back(r);
      }
    }
  }
}

}  // namespace

bool image_semantics(const Instruction& ins, Semantics& s) {
  const bool tex = kTexture.count(ins.base) > 0;
  if (!tex && !kSurface.count(ins.base)) return false;
  s.memory = true;
  s.register_only = false;
  s.source = (tex || ins.base == "SULD" || ins.base == "SUATOM" || ins.base == "SUQUERY") ? Source::Load
                                                                                         : Source::Computed;
  if (tex) texture(ins, s);
  else surface(ins, s);
  return true;
}

}  // namespace dhp::audit
