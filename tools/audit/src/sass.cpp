// nvdisasm text -> Module. See sass.hpp for what is modelled.
#include "sass.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

namespace dhp::audit {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// Splits on commas outside brackets, parentheses and backquotes.
std::vector<std::string> split_operands(const std::string& s) {
  std::vector<std::string> out;
  int depth = 0;
  bool quote = false;
  std::string cur;
  for (char c : s) {
    if (c == '`') quote = !quote;
    if (!quote) {
      if (c == '[' || c == '(') ++depth;
      if (c == ']' || c == ')') --depth;
      if (c == ',' && depth == 0) {
        out.push_back(trim(cur));
        cur.clear();
        continue;
      }
    }
    cur += c;
  }
  if (!trim(cur).empty()) out.push_back(trim(cur));
  return out;
}

// Reads a register name at s[i] ("R12", "URZ", "P3", "UPT"); on success sets
// ref and advances i past the name (not past suffixes).
bool read_register(const std::string& s, size_t& i, RegRef& ref) {
  size_t j = i;
  bool uniform = false;
  if (j < s.size() && s[j] == 'U') { uniform = true; ++j; }
  if (j >= s.size()) return false;
  char kind = s[j];
  if (kind != 'R' && kind != 'P') return false;
  ++j;
  auto ident_end = [&](size_t k) {
    return k >= s.size() || !(std::isalnum(static_cast<unsigned char>(s[k])) || s[k] == '_');
  };
  uint16_t index = 0;
  if (j < s.size() && ((kind == 'R' && s[j] == 'Z') || (kind == 'P' && s[j] == 'T'))) {
    if (!ident_end(j + 1)) return false;
    index = kind == 'R' ? (uniform ? 63 : 255) : 7;
    ++j;
  } else {
    size_t d = j;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == d || !ident_end(j)) return false;
    index = static_cast<uint16_t>(std::stoi(s.substr(d, j - d)));
  }
  if (kind == 'R') ref.file = uniform ? RegFile::UR : RegFile::R;
  else ref.file = uniform ? RegFile::UP : RegFile::P;
  ref.index = index;
  ref.width = 1;
  i = j;
  return true;
}

// Every register named inside a bracket expression such as "R2.64+UR4+0x10",
// and the immediate displacement.
void scan_bracket(const std::string& s, std::vector<RegRef>& regs, int64_t& imm) {
  size_t i = 0;
  bool neg = false;
  while (i < s.size()) {
    char c = s[i];
    if (c == '-') { neg = true; ++i; continue; }
    if (c == '+' || std::isspace(static_cast<unsigned char>(c))) { neg = c == '+' ? false : neg; ++i; continue; }
    RegRef r;
    size_t j = i;
    if ((i == 0 || !std::isalnum(static_cast<unsigned char>(s[i - 1]))) && read_register(s, j, r)) {
      if (s.compare(j, 3, ".64") == 0) r.width = 2;
      if (r.file == RegFile::R || r.file == RegFile::UR) regs.push_back(r);
      i = j;
      while (i < s.size() && (s[i] == '.' || std::isalnum(static_cast<unsigned char>(s[i])))) ++i;
      continue;
    }
    if (starts_with(s.substr(i), "0x")) {
      size_t j2 = i + 2;
      while (j2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[j2]))) ++j2;
      int64_t v = static_cast<int64_t>(std::stoull(s.substr(i + 2, j2 - i - 2), nullptr, 16));
      imm += neg ? -v : v;
      i = j2;
      continue;
    }
    ++i;
  }
}

// "c[0x3][0x10]" / "desc[UR4][R2.64]" -> the contents of the first and
// second bracket pairs.
bool bracket_pair(const std::string& s, size_t from, std::string& first, std::string& second,
                  bool& has_second) {
  size_t a = s.find('[', from);
  if (a == std::string::npos) return false;
  size_t b = s.find(']', a);
  if (b == std::string::npos) return false;
  first = s.substr(a + 1, b - a - 1);
  has_second = b + 1 < s.size() && s[b + 1] == '[';
  if (has_second) {
    size_t c = s.find(']', b + 1);
    if (c == std::string::npos) return false;
    second = s.substr(b + 2, c - b - 2);
  }
  return true;
}


}  // namespace

int64_t parse_integer(const std::string& s) {
  std::string t = trim(s);
  bool neg = !t.empty() && t[0] == '-';
  if (neg) t = t.substr(1);
  int64_t v = starts_with(t, "0x") ? static_cast<int64_t>(std::stoull(t.substr(2), nullptr, 16))
                                   : std::stoll(t);
  return neg ? -v : v;
}

bool RegRef::is_zero() const {
  switch (file) {
    case RegFile::R: return index == 255;
    case RegFile::UR: return index == 63;
    case RegFile::P:
    case RegFile::UP: return index == 7;
  }
  return false;
}

std::string RegRef::name() const {
  const char* prefix = file == RegFile::R ? "R" : file == RegFile::UR ? "UR" : file == RegFile::P ? "P" : "UP";
  std::string n = prefix;
  if (is_zero()) n += (file == RegFile::R || file == RegFile::UR) ? "Z" : "T";
  else n += std::to_string(index);
  return n;
}

Operand parse_operand(const std::string& raw) {
  Operand op;
  op.text = raw;
  std::string s = trim(raw);
  if (starts_with(s, "`(")) {
    op.kind = OperandKind::Target;
    op.target = s.substr(2, s.size() > 3 ? s.size() - 3 : 0);
    return op;
  }
  // Memory descriptors and constant banks.
  std::string first, second;
  bool has_second = false;
  if (starts_with(s, "c[") || starts_with(s, "cx[")) {
    op.kind = OperandKind::Constant;
    if (!bracket_pair(s, 0, first, second, has_second) || !has_second)
      throw std::runtime_error("unreadable constant operand: " + raw);
    op.const_bank = static_cast<int>(parse_integer(first));
    int64_t imm = 0;
    scan_bracket(second, op.regs, imm);
    for (auto& r : op.regs) op.const_indexed |= !r.is_zero();
    op.const_offset = imm;
    // cx[URx][...]: bank chosen by a register, which acts as an address.
    if (starts_with(s, "cx[")) {
      int64_t ignored = 0;
      scan_bracket(first, op.regs, ignored);
      op.const_indexed = true;
    }
    return op;
  }
  if (starts_with(s, "desc[") || starts_with(s, "gdesc[") || starts_with(s, "tmem[")) {
    op.kind = OperandKind::Memory;
    if (!bracket_pair(s, 0, first, second, has_second))
      throw std::runtime_error("unreadable memory operand: " + raw);
    int64_t ignored = 0;
    scan_bracket(first, op.desc_regs, ignored);
    // gdesc[URx] names a pair of 64-bit wgmma descriptors (A and B);
    // desc[URx] one 64-bit memory descriptor, URx:URx+1, whose upper half
    // holds the L2 cache policy (createpolicy): a secret there changes what
    // the cache keeps just as a secret address does.
    if (starts_with(s, "gdesc[")) for (auto& r : op.desc_regs) r.width = 4;
    if (starts_with(s, "desc[")) for (auto& r : op.desc_regs) r.width = 2;
    if (has_second) scan_bracket(second, op.regs, op.mem_imm);
    return op;
  }
  if (!s.empty() && s[0] == '[') {
    op.kind = OperandKind::Memory;
    size_t e = s.find(']');
    scan_bracket(s.substr(1, e == std::string::npos ? std::string::npos : e - 1), op.regs, op.mem_imm);
    return op;
  }
  // Registers, possibly with prefixes (-, !, |, ~) and suffixes.
  size_t i = 0;
  while (i < s.size() && (s[i] == '-' || s[i] == '!' || s[i] == '|' || s[i] == '~' || s[i] == '+')) {
    if (s[i] == '!') op.negated = true;
    ++i;
  }
  if (s.compare(i, 2, "PR") == 0 || s.compare(i, 3, "UPR") == 0) {
    size_t n = s.compare(i, 2, "PR") == 0 ? 2 : 3;
    if (i + n == s.size() || !std::isalnum(static_cast<unsigned char>(s[i + n]))) {
      op.kind = OperandKind::PredGroup;
      RegFile f = n == 2 ? RegFile::P : RegFile::UP;
      for (uint16_t p = 0; p < 7; ++p) op.regs.push_back({f, p, 1});
      return op;
    }
  }
  RegRef r;
  size_t j = i;
  if (read_register(s, j, r)) {
    if (s.compare(j, 3, ".64") == 0) r.width = 2;
    op.kind = OperandKind::Register;
    op.regs.push_back(r);
    return op;
  }
  if (starts_with(s.substr(i), "SR")) { op.kind = OperandKind::Special; return op; }
  if (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' ||
                       starts_with(s.substr(i), "INF") || starts_with(s.substr(i), "QNAN") ||
                       starts_with(s.substr(i), "NAN"))) {
    op.kind = OperandKind::Immediate;
    return op;
  }
  // A bare function symbol or label (RET.REL.NODEC R4 `(kernel) has the
  // backquote form; some tools print plain names).
  op.kind = OperandKind::Other;
  return op;
}

Instruction parse_instruction(const std::string& raw) {
  Instruction ins;
  std::string s = trim(raw);
  // Drop nvdisasm's annotations: (*"SpillRefill"*) and the like.
  for (size_t a = s.find("(*"); a != std::string::npos; a = s.find("(*")) {
    size_t b = s.find("*)", a);
    if (b == std::string::npos) break;
    s.erase(a, b + 2 - a);
  }
  s = trim(s);
  if (!s.empty() && s.back() == ';') s = trim(s.substr(0, s.size() - 1));
  ins.text = s;
  size_t i = 0;
  if (!s.empty() && s[0] == '@') {
    size_t e = s.find_first_of(" \t");
    std::string g = s.substr(1, e - 1);
    if (!g.empty() && g[0] == '!') { ins.guard_negated = true; g = g.substr(1); }
    size_t k = 0;
    if (!read_register(g, k, ins.guard)) throw std::runtime_error("unreadable guard: " + raw);
    ins.guarded = true;
    i = e;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  size_t e = s.find_first_of(" \t", i);
  ins.opcode = s.substr(i, e == std::string::npos ? std::string::npos : e - i);
  std::stringstream mods(ins.opcode);
  std::string part;
  std::getline(mods, ins.base, '.');
  while (std::getline(mods, part, '.')) ins.mods.push_back(part);
  if (e != std::string::npos)
    for (auto& t : split_operands(s.substr(e))) ins.ops.push_back(parse_operand(t));
  return ins;
}

Module parse_nvdisasm(const std::string& text) {
  Module m;
  std::istringstream in(text);
  std::string line;
  Kernel* k = nullptr;
  std::vector<SourceLoc> loc;
  std::vector<std::string> pending_labels;
  std::vector<std::string> functions_declared;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.empty()) continue;
    if (starts_with(t, ".target")) {
      m.arch = trim(t.substr(7));
      size_t d = m.arch.find_first_of("0123456789");
      if (d != std::string::npos) m.sm = std::stoi(m.arch.substr(d));
      continue;
    }
    if (starts_with(t, "//---") && t.find(" .text.") != std::string::npos) {
      size_t a = t.find(".text.") + 6;
      size_t b = t.find_first_of(" \t", a);
      m.kernels.emplace_back();
      k = &m.kernels.back();
      k->name = t.substr(a, b - a);
      loc.clear();
      pending_labels.clear();
      continue;
    }
    if (starts_with(t, "//## File")) {
      // //## File "a.cu", line 12 inlined at "b.cu", line 40 ...
      loc.clear();
      size_t p = 0;
      while ((p = t.find('"', p)) != std::string::npos) {
        size_t q = t.find('"', p + 1);
        if (q == std::string::npos) break;
        SourceLoc sl;
        sl.file = t.substr(p + 1, q - p - 1);
        size_t ln = t.find("line ", q);
        if (ln != std::string::npos) sl.line = std::stoi(t.substr(ln + 5));
        loc.push_back(sl);
        p = t.find('"', ln == std::string::npos ? q + 1 : ln);
      }
      continue;
    }
    if (!k) continue;
    if (starts_with(t, ".type") && t.find("@function") != std::string::npos) {
      std::string name = trim(t.substr(5, t.find(',') - 5));
      functions_declared.push_back(name);
      continue;
    }
    if (t[0] == '.' && t.back() != ':') continue;  // other directives
    if (t.back() == ':' && t.find(' ') == std::string::npos && t.find("/*") == std::string::npos) {
      pending_labels.push_back(t.substr(0, t.size() - 1));
      continue;
    }
    if (starts_with(t, "/*")) {
      size_t c = t.find("*/");
      if (c == std::string::npos) continue;
      Instruction ins = parse_instruction(t.substr(c + 2));
      ins.offset = static_cast<uint32_t>(std::stoul(t.substr(2, c - 2), nullptr, 16));
      ins.loc = loc;
      size_t idx = k->code.size();
      for (auto& l : pending_labels) {
        k->labels[l] = idx;
        for (auto& f : functions_declared)
          if (f == l) k->functions.push_back({l, idx});
      }
      pending_labels.clear();
      k->code.push_back(std::move(ins));
      continue;
    }
  }
  for (auto& kern : m.kernels) {
    bool has_entry = false;
    for (auto& f : kern.functions) has_entry |= f.name == kern.name;
    if (!has_entry) kern.functions.insert(kern.functions.begin(), {kern.name, 0});
    std::sort(kern.functions.begin(), kern.functions.end(),
              [](const Function& a, const Function& b) { return a.first < b.first; });
  }
  if (m.arch.empty()) throw std::runtime_error("no .target line: not nvdisasm output");
  return m;
}

}  // namespace dhp::audit
