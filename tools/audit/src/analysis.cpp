// Control-flow graph + taint fixpoint + rules. See analysis.hpp.
//
// Abstract state per program point: for every register (R0-R255, UR0-UR63,
// P0-P7, UP0-UP7) and every 4-byte stack slot, an "origin": 0 when the value
// is public, otherwise the index+1 of the instruction that made it secret.
// Join = secret if secret on any path (the smallest origin is kept, so the
// fixpoint is reached). A second bit per register says "public and derived
// from a declared public pointer parameter" (must-analysis: AND at joins);
// a load through such an address yields a public value.
//
// Control dependence is not tracked: the only way a secret could steer
// control is through a secret branch, and that branch is itself a finding.
#include "analysis.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <stdexcept>

#include "isa.hpp"

namespace dhp::audit {
namespace {

constexpr int kR = 0, kUR = 256, kP = 320, kUP = 328, kRegs = 336;
constexpr uint32_t kUninitLocal = 0xFFFFFFFFu;  // origin: never-written stack slot

int reg_slot(const RegRef& r, int k) {
  switch (r.file) {
    case RegFile::R: return kR + std::min(255, r.index + k);
    case RegFile::UR: return kUR + std::min(63, r.index + k);
    case RegFile::P: return kP + std::min(7, r.index + k);
    case RegFile::UP: return kUP + std::min(7, r.index + k);
  }
  return 0;
}

bool zero_slot(int s) { return s == kR + 255 || s == kUR + 63 || s == kP + 7 || s == kUP + 7; }

uint32_t join1(uint32_t a, uint32_t b) {
  if (a == 0) return b;
  if (b == 0) return a;
  return std::min(a, b);
}

// Register values as seen by instructions under one public guard (@P / @!P)
// within a basic block: after `@P1 LEA R24, P3, ...` the carry P3 is public
// for a later `@P1 LEA.HI.X ..., P3`, even though on the @!P1 path P3 still
// holds an older (perhaps secret) value. Cleared at block boundaries.
struct Overlay {
  int pred = 0;
  bool neg = false;
  std::vector<std::pair<int, std::pair<uint32_t, uint8_t>>> regs;  // slot -> (taint, pubptr)
  const std::pair<uint32_t, uint8_t>* find(int sl) const {
    for (auto& r : regs)
      if (r.first == sl) return &r.second;
    return nullptr;
  }
  void set(int sl, uint32_t t, uint8_t p) {
    for (auto& r : regs)
      if (r.first == sl) { r.second = {t, p}; return; }
    regs.push_back({sl, {t, p}});
  }
  void erase(int sl) {
    for (size_t i = 0; i < regs.size(); ++i)
      if (regs[i].first == sl) { regs[i] = regs.back(); regs.pop_back(); return; }
  }
};

struct State {
  bool reached = false;
  std::vector<Overlay> ov;       // per block, not joined
  std::vector<uint32_t> taint;   // kRegs registers, then stack slots, then "unknown local"
  std::vector<uint8_t> pubptr;   // per register
  bool sp_known = false;
  int64_t sp_delta = 0;

  bool join(const State& o) {
    if (!o.reached) return false;
    if (!reached) { *this = o; return true; }
    bool changed = false;
    for (size_t i = 0; i < taint.size(); ++i) {
      uint32_t v = join1(taint[i], o.taint[i]);
      if (v != taint[i]) { taint[i] = v; changed = true; }
    }
    for (size_t i = 0; i < pubptr.size(); ++i) {
      uint8_t v = pubptr[i] & o.pubptr[i];
      if (v != pubptr[i]) { pubptr[i] = v; changed = true; }
    }
    bool known = sp_known && o.sp_known && sp_delta == o.sp_delta;
    if (known != sp_known) { sp_known = known; changed = true; }
    return changed;
  }
};

struct Ctx {
  const Kernel& k;
  const Module& m;
  std::vector<Semantics> sem;
  std::vector<std::pair<int64_t, int64_t>> pub_ranges;  // constant-bank byte ranges
  int64_t sp_off;
  int64_t stack_bias = 0;  // bytes the kernel may move R1 below its start
  int n_slots = 0;
  bool stack_escapes = false;  // a stack address is made generic (see below)
  std::vector<uint32_t> cause;  // instruction -> origin of the secret it consumed
  std::vector<bool> external;   // instruction -> a CALL whose callee is not in the kernel
};

// IADD3 / VIADD / IADD R1, R1, imm: the stack pointer moved by imm bytes.
bool stack_adjustment(const Instruction& ins, int64_t& delta) {
  auto is_r1 = [](const Operand& o) {
    return o.kind == OperandKind::Register && o.regs[0].file == RegFile::R && o.regs[0].index == 1;
  };
  if ((ins.base != "IADD3" && ins.base != "VIADD" && ins.base != "IADD") || ins.ops.size() < 3 ||
      !is_r1(ins.ops[0]) || !is_r1(ins.ops[1]) || ins.ops[2].kind != OperandKind::Immediate)
    return false;
  delta = parse_integer(ins.ops[2].text);
  // A 32-bit add: sm_90's VIADD R1, R1, 0xffffffe0 moves the stack pointer
  // down by 0x20. Read as +4 GiB it put every [R1+imm] outside the frame, so
  // spills of public values refilled as secret.
  if (delta > INT32_MAX && delta <= static_cast<int64_t>(UINT32_MAX)) delta -= int64_t{1} << 32;
  return true;
}

// [R1+imm] with R1 the stack pointer: the stack slot index, or -1.
int stack_slot(const Ctx& c, const State& s, const Instruction& ins) {
  for (auto& o : ins.ops) {
    if (o.kind != OperandKind::Memory) continue;
    if (!s.sp_known || o.regs.size() != 1 || o.regs[0].file != RegFile::R || o.regs[0].index != 1 ||
        !o.desc_regs.empty())
      return -1;
    int64_t byte = c.stack_bias + s.sp_delta + o.mem_imm;
    if (byte < 0 || byte % 4) return -1;
    int64_t idx = byte / 4;
    return idx < c.n_slots ? static_cast<int>(idx) : -1;
  }
  return -1;
}

// A finding and the origin of the secret that triggered it (0: none, e.g. a
// variable-time call), from which the chain is rebuilt after the pass.
struct RawFinding {
  Finding finding;
  uint32_t origin;
};

// Applies instruction i to s. When `findings` is given (final pass), checks
// the rules and records the chain causes.
void transfer(Ctx& c, size_t i, State& s, std::vector<RawFinding>* findings) {
  const Instruction& ins = c.k.code[i];
  const Semantics& sm = c.sem[i];
  const uint32_t self = static_cast<uint32_t>(i + 1);
  // The overlay of this instruction's guard, when the guard is public.
  const bool public_guard = ins.guarded && !ins.guard.is_zero() && s.taint[reg_slot(ins.guard, 0)] == 0;
  const int guard_slot = ins.guarded ? reg_slot(ins.guard, 0) : -1;
  auto find_overlay = [&](bool neg) -> Overlay* {
    for (auto& o : s.ov)
      if (o.pred == guard_slot && o.neg == neg) return &o;
    return nullptr;
  };
  auto overlay = [&](bool neg) -> Overlay* {
    if (Overlay* o = find_overlay(neg)) return o;
    s.ov.push_back({guard_slot, neg, {}});
    return &s.ov.back();
  };
  const Overlay* cur = public_guard ? find_overlay(ins.guard_negated) : nullptr;
  auto get = [&](const RegRef& r, int k) {
    int sl = reg_slot(r, k);
    if (zero_slot(sl)) return 0u;
    if (cur)
      if (auto* v = cur->find(sl)) return v->first;
    return s.taint[sl];
  };
  auto getpub = [&](int sl) -> bool {
    if (cur)
      if (auto* v = cur->find(sl)) return v->second;
    return s.pubptr[sl];
  };
  auto taint_of = [&](const std::vector<RegRef>& regs, std::string* name) {
    uint32_t t = 0;
    for (auto& r : regs)
      for (int k = 0; k < r.width; ++k) {
        uint32_t v = get(r, k);
        if (v && t == 0 && name) {
          RegRef rr = r;
          rr.index = static_cast<uint16_t>(r.index + k);
          rr.width = 1;
          *name = rr.name();
        }
        t = join1(t, v);
      }
    return t;
  };
  auto pub_of = [&](const std::vector<RegRef>& regs) {
    for (auto& r : regs)
      if (!zero_slot(reg_slot(r, 0)) && getpub(reg_slot(r, 0))) return true;
    return false;
  };
  bool const_pub = false;  // an operand is c[0x0][declared public pointer]
  for (auto& o : ins.ops)
    if (o.kind == OperandKind::Constant && o.const_bank == 0 && !o.const_indexed)
      for (auto& rg : c.pub_ranges)
        if (o.const_offset >= rg.first && o.const_offset < rg.second) const_pub = true;

  std::string guard_name, use_name, addr_name, cond_name;
  uint32_t g = 0;
  if (ins.guarded && !ins.guard.is_zero()) {
    g = get(ins.guard, 0);
    guard_name = ins.guard.name();
  }
  uint32_t u = taint_of(sm.uses, &use_name);
  uint32_t a = taint_of(sm.addr, &addr_name);
  uint32_t cnd = taint_of(sm.cond, &cond_name);
  int slot = (sm.source == Source::LocalLoad || sm.store_local) ? stack_slot(c, s, ins) : -1;

  // ---- rules (final pass only)
  if (findings) {
    uint32_t consumed = 0;
    for (uint32_t v : {a, cnd, g, u}) consumed = consumed ? consumed : v;
    c.cause[i] = consumed;
    Finding f;
    f.offset = ins.offset;
    f.sass = ins.text;
    f.loc = ins.loc;
    auto add = [&](char rule, const std::string& why, uint32_t origin) {
      f.rule = rule;
      f.reason = why;
      findings->push_back({f, origin});
    };
    if (sm.control == Control::Call && is_variable_time_routine(sm.target))
      add('d', "call into variable-time routine " + sm.target, 0);
    else if (c.external[i])
      add('d', "call into a routine outside the kernel (" +
                   (sm.target.empty() ? "absolute address: vprintf, malloc, free, ..." : sm.target) + ")",
          0);
    else if (sm.control != Control::None && g)
      add('a', "control transfer guarded by secret " + guard_name, g);
    else if (sm.control != Control::None && cnd)
      add('a', "branch condition " + cond_name + " is secret", cnd);
    else if (sm.control != Control::None && a)
      add('a', "control operand " + addr_name + " (target, mask, count) is secret", a);
    else if (sm.memory && a)
      add('b', "memory address operand " + addr_name + " is secret", a);
    else if (sm.memory && g)
      add('b', "memory access guarded by secret " + guard_name, g);
    else if (!sm.register_only && sm.control == Control::None && g)
      add('c', "side effect guarded by secret " + guard_name, g);
  }

  // ---- result taint
  uint32_t res = 0, cause = 0;
  bool rpub = false;
  switch (sm.source) {
    case Source::Computed:
      res = (u || sm.secret_const) ? self : 0;
      cause = u;
      rpub = !res && (pub_of(sm.uses) || const_pub);
      break;
    case Source::Load: {
      bool via_public_pointer = a == 0 && pub_of(sm.addr);
      res = via_public_pointer ? 0 : self;
      cause = a;
      break;
    }
    case Source::LocalLoad: {
      uint32_t t = 0;
      if (slot >= 0)
        for (int w = 0; w < sm.local_bytes / 4 && slot + w < c.n_slots; ++w)
          t = join1(t, s.taint[kRegs + slot + w]);
      else
        t = self;  // unknown stack address: secret
      res = t ? self : 0;
      cause = t == self ? a : t;
      break;
    }
    case Source::Constant:
      res = (a || sm.secret_const) ? self : 0;
      cause = a;
      rpub = !res && const_pub;
      break;
    case Source::Public:
      break;
  }
  if (g) { res = self; cause = cause ? cause : g; }
  if (findings && res && !c.cause[i]) c.cause[i] = cause;
  if (findings && sm.source == Source::LocalLoad && res) c.cause[i] = cause;

  // ---- stack stores
  if (sm.store_local) {
    uint32_t d = taint_of(sm.store_data, nullptr);
    uint32_t v = join1(d ? self : 0, g ? self : 0);
    if (findings && v) c.cause[i] = d ? d : g;
    if (slot >= 0) {
      for (int w = 0; w < sm.local_bytes / 4 && slot + w < c.n_slots; ++w) {
        uint32_t& t = s.taint[kRegs + slot + w];
        // A byte or half-word store leaves the rest of the slot as it was:
        // STL [R1], secret; STL.U16 [R1], public; LDL [R1] is still secret.
        t = (ins.guarded || sm.local_partial) ? join1(t, v) : v;
      }
    } else {
      for (int w = 0; w <= c.n_slots; ++w) s.taint[kRegs + w] = join1(s.taint[kRegs + w], v);
    }
  }

  // ---- generic stores that may land in the stack: once the kernel makes
  // a stack address generic, ST / ATOM / RED through any pointer may write a
  // stack slot, and a later LDL [R1+imm] of that slot must see the value.
  if (sm.generic_store && c.stack_escapes) {
    uint32_t d = taint_of(sm.uses, nullptr);
    uint32_t v = join1(d ? self : 0, g ? self : 0);
    if (findings && v && !c.cause[i]) c.cause[i] = d ? d : g;
    if (v)
      for (int w = 0; w <= c.n_slots; ++w) s.taint[kRegs + w] = join1(s.taint[kRegs + w], v);
  }

  // ---- register writes
  bool weak = ins.guarded || sm.weak_defs;
  std::vector<int> written;
  for (auto& r : sm.defs)
    for (int k = 0; k < r.width; ++k) {
      int sl = reg_slot(r, k);
      if (zero_slot(sl)) continue;
      written.push_back(sl);
      if (public_guard && !sm.weak_defs) {
        // Strong under the guard; the complement keeps the old value.
        Overlay* comp = overlay(!ins.guard_negated);
        if (!comp->find(sl)) comp->set(sl, s.taint[sl], s.pubptr[sl]);
        overlay(ins.guard_negated)->set(sl, res, rpub);
        for (auto& o : s.ov)
          if (!(o.pred == guard_slot)) o.erase(sl);
      } else {
        for (auto& o : s.ov) o.erase(sl);
      }
      if (weak) {
        s.taint[sl] = join1(s.taint[sl], res);
        s.pubptr[sl] = s.pubptr[sl] && rpub;
      } else {
        s.taint[sl] = res;
        s.pubptr[sl] = rpub;
      }
    }
  // A new value of a guard predicate invalidates the overlays keyed on it.
  for (int sl : written)
    s.ov.erase(std::remove_if(s.ov.begin(), s.ov.end(), [&](const Overlay& o) { return o.pred == sl; }),
               s.ov.end());

  // ---- stack pointer (R1) tracking
  for (auto& r : sm.defs) {
    if (r.file != RegFile::R || r.index > 1 || r.index + r.width <= 1) continue;
    bool set_sp = false;
    int64_t delta = 0;
    for (auto& o : ins.ops)
      if (o.kind == OperandKind::Constant && o.const_bank == 0 && !o.const_indexed && o.const_offset == c.sp_off)
        set_sp = true;
    const bool adjust = stack_adjustment(ins, delta);
    if (ins.guarded) s.sp_known = false;
    else if (set_sp) { s.sp_known = true; s.sp_delta = 0; }
    else if (adjust && s.sp_known) s.sp_delta += delta;
    else s.sp_known = false;
  }
}

size_t function_of(const Kernel& k, size_t i) {
  size_t f = 0;
  for (size_t j = 0; j < k.functions.size(); ++j)
    if (k.functions[j].first <= i) f = j;
  return f;
}

}  // namespace

const char* rule_name(char rule) {
  switch (rule) {
    case 'a': return "control";
    case 'b': return "memory";
    case 'c': return "side-effect";
    case 'd': return "variable-time";
  }
  return "?";
}

// True when ins turns a stack address into a generic one: it reads the
// stack pointer R1 as a value (not as [R1+imm], and not to move it), or the
// local-memory window base cvta.local adds (c[0x0][0x20] / c[0x0][0x24]
// below sm_100). Conservative: any such use counts, whatever follows.
static bool makes_stack_generic(const Instruction& ins, const Semantics& sm, int arch) {
  int64_t delta = 0;
  if (!stack_adjustment(ins, delta))
    for (auto& r : sm.uses)
      if (r.file == RegFile::R && r.index <= 1 && r.index + r.width > 1) return true;
  for (auto& o : ins.ops) {
    if (o.kind == OperandKind::Constant && o.const_bank == 0 && !o.const_indexed && arch < 100 &&
        (o.const_offset == 0x20 || o.const_offset == 0x24))
      return true;
    if (o.kind == OperandKind::Special && o.text.find("LWIN") != std::string::npos) return true;
  }
  return ins.base == "GETLMEMBASE";
}

int64_t param_base(int sm) { return sm >= 100 ? 0x380 : sm >= 90 ? 0x210 : 0x160; }
int64_t stack_pointer_offset(int sm) { return sm >= 100 ? 0x37c : 0x28; }

KernelReport audit_kernel(const Kernel& k, const Module& m, const PublicPointers& pub) {
  Ctx c{k, m, {}, {}, stack_pointer_offset(m.sm), 0, 0, false, {}, {}};
  const size_t n = k.code.size();
  KernelReport rep;
  rep.name = k.name;
  rep.arch = m.arch;
  rep.instructions = n;
  if (n == 0) return rep;
  for (int64_t off : pub.param_offsets)
    c.pub_ranges.push_back({param_base(m.sm) + off, param_base(m.sm) + off + 8});
  c.sem.reserve(n);
  int64_t max_local = 0;
  for (auto& ins : k.code) {
    c.sem.push_back(semantics_of(ins));
    c.stack_escapes = c.stack_escapes || makes_stack_generic(ins, c.sem.back(), m.sm);
    if (ins.base == "LDL" || ins.base == "STL")
      for (auto& o : ins.ops)
        if (o.kind == OperandKind::Memory) max_local = std::max(max_local, o.mem_imm + 16);
    // Stack frame set-up: IADD3 R1, R1, -0x20, RZ moves the stack pointer down.
    int64_t d = 0;
    if (stack_adjustment(ins, d) && d < 0) c.stack_bias += -d;
  }
  c.stack_bias = std::min<int64_t>(c.stack_bias, 1 << 16);
  c.n_slots = static_cast<int>(std::min<int64_t>((c.stack_bias + max_local) / 4 + 1, 1 << 15));
  c.cause.assign(n, 0);

  // ---- successors
  std::set<std::string> function_names;
  for (auto& f : k.functions) function_names.insert(f.name);
  auto target_index = [&](const std::string& t) -> size_t {
    auto it = k.labels.find(t);
    if (it == k.labels.end()) {
      if (t == k.name) return 0;
      throw std::runtime_error("kernel " + k.name + ": branch to unknown label " + t);
    }
    return it->second;
  };
  // Calls whose callee is not code of this kernel: CALL.ABS (nvcc's calls
  // to vprintf, malloc, free go through an absolute address in constant
  // bank 4) or a symbol defined elsewhere (-rdc). What they run, and for how
  // long, is not in the audited SASS: rule d. Their only successor here is
  // the return. (CALL.REL through a register, a function pointer, is an
  // offset into this kernel's code: it may enter any of its subroutines.)
  c.external.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    const Semantics& sm = c.sem[i];
    if (sm.control != Control::Call) continue;
    c.external[i] = has_mod(k.code[i], "ABS") || (!sm.target.empty() && !function_names.count(sm.target) && !k.labels.count(sm.target) &&
                            sm.target != k.name);
  }
  std::map<size_t, std::vector<size_t>> return_sites;  // function index -> sites
  for (size_t i = 0; i < n; ++i)
    if (c.sem[i].control == Control::Call && function_names.count(c.sem[i].target) && i + 1 < n)
      return_sites[function_of(k, target_index(c.sem[i].target))].push_back(i + 1);
  std::vector<std::vector<size_t>> succ(n);
  std::vector<bool> leader(n, false);
  leader[0] = true;
  for (size_t i = 0; i < n; ++i) {
    const Semantics& sm = c.sem[i];
    const bool conditional = k.code[i].guarded || !sm.cond.empty() ||
                             k.code[i].opcode.find(".DIV") != std::string::npos ||
                             k.code[i].opcode.find(".CONV") != std::string::npos;
    auto fall = [&] { if (i + 1 < n) succ[i].push_back(i + 1); };
    switch (sm.control) {
      case Control::Branch:
        succ[i].push_back(target_index(sm.target));
        if (conditional) fall();
        break;
      case Control::Indirect:
        for (auto& l : k.labels) succ[i].push_back(l.second);
        fall();
        break;
      case Control::Call:
        if (function_names.count(sm.target)) {
          succ[i].push_back(target_index(sm.target));
          if (conditional) fall();
        } else if (c.external[i]) {
          fall();
        } else if (sm.target.empty()) {
          for (auto& f : k.functions) succ[i].push_back(f.first);  // a function pointer
          fall();
        } else {
          succ[i].push_back(target_index(sm.target));  // CALL.REL.NOINC to a label: a jump
          fall();
        }
        break;
      case Control::Return:
        for (size_t r : return_sites[function_of(k, i)]) succ[i].push_back(r);
        if (conditional) fall();
        break;
      case Control::Exit:
        if (conditional) fall();
        break;
      default:
        fall();
    }
    bool ends_block = sm.control == Control::Branch || sm.control == Control::Indirect ||
                      sm.control == Control::Call || sm.control == Control::Return ||
                      sm.control == Control::Exit;
    if (ends_block && i + 1 < n) leader[i + 1] = true;
    for (size_t t : succ[i])
      if (t != i + 1) leader[t] = true;
  }
  for (auto& f : k.functions) leader[f.first] = true;
  // Blocks: [start, end).
  std::vector<size_t> block_of(n), starts;
  for (size_t i = 0; i < n; ++i) {
    if (leader[i]) starts.push_back(i);
    block_of[i] = starts.size() - 1;
  }
  const size_t nb = starts.size();
  auto block_end = [&](size_t b) { return b + 1 < nb ? starts[b + 1] : n; };

  State init;
  init.reached = true;
  init.taint.assign(kRegs + c.n_slots + 1, 0);
  for (int w = 0; w <= c.n_slots; ++w) init.taint[kRegs + w] = kUninitLocal;
  init.pubptr.assign(kRegs, 0);
  std::vector<State> in(nb);
  for (auto& st : in) { st.taint.assign(init.taint.size(), 0); st.pubptr.assign(kRegs, 0); }
  in[0] = init;
  std::deque<size_t> work{0};
  std::vector<bool> queued(nb, false);
  queued[0] = true;
  while (!work.empty()) {
    size_t b = work.front();
    work.pop_front();
    queued[b] = false;
    State s = in[b];
    s.ov.clear();
    size_t e = block_end(b);
    for (size_t i = starts[b]; i < e; ++i) transfer(c, i, s, nullptr);
    for (size_t t : succ[e - 1]) {
      size_t tb = block_of[t];
      if (in[tb].join(s) && !queued[tb]) { queued[tb] = true; work.push_back(tb); }
    }
  }
  // Final pass: rules and chain causes on the fixpoint states.
  std::vector<RawFinding> raw;
  for (size_t b = 0; b < nb; ++b) {
    if (!in[b].reached) continue;
    State s = in[b];
    s.ov.clear();
    for (size_t i = starts[b]; i < block_end(b); ++i) {
      ++rep.reachable;
      transfer(c, i, s, &raw);
    }
  }
  // Chains: follow causes from the secret operand's origin back to a source.
  for (auto& [f, first] : raw) {
    uint32_t origin = first;
    std::set<uint32_t> seen;
    while (origin && f.chain.size() < 24 && !seen.count(origin)) {
      seen.insert(origin);
      if (origin == kUninitLocal) {
        f.chain.push_back({0, "(stack slot never written: local memory)", {}});
        break;
      }
      const Instruction& src = k.code[origin - 1];
      f.chain.push_back({src.offset, src.text, src.loc});
      origin = c.cause[origin - 1];
    }
    std::reverse(f.chain.begin(), f.chain.end());
    rep.findings.push_back(std::move(f));
  }
  std::sort(rep.findings.begin(), rep.findings.end(),
            [](const Finding& x, const Finding& y) { return x.offset < y.offset; });
  return rep;
}

}  // namespace dhp::audit
