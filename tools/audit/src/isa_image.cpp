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

bool is_pred(const Operand& o) {
  return o.kind == OperandKind::Register && (o.regs[0].file == RegFile::P || o.regs[0].file == RegFile::UP);
}
bool is_gpr(const Operand& o) {
  return o.kind == OperandKind::Register && (o.regs[0].file == RegFile::R || o.regs[0].file == RegFile::UR);
}

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

}  // namespace

bool image_semantics(const Instruction& ins, Semantics& s) {
  if (!kTexture.count(ins.base)) return false;
  s.memory = true;
  s.register_only = false;
  s.source = Source::Load;
  texture(ins, s);
  return true;
}

}  // namespace dhp::audit
