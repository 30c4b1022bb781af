// Output of dhp-audit: a readable table with a one-line verdict last, or one
// JSON document: {"files":[{"path","kernels":[{"name","arch","findings":[
// {"offset","sass","rule","file","line","chain":[...]}]}]}]}.
#include "report.hpp"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

namespace dhp::audit {
namespace {

std::string json_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += ch;
        }
    }
  }
  return o;
}

std::string q(const std::string& s) {
  std::string out = "\"";
  out += json_escape(s);
  out += '"';
  return out;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

std::string basename_of(const std::string& p) {
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

std::string where(const std::vector<SourceLoc>& loc) {
  if (loc.empty()) return "(no line info)";
  std::string w = basename_of(loc[0].file) + ":" + std::to_string(loc[0].line);
  if (loc.size() > 1) w += " (inlined at " + basename_of(loc.back().file) + ":" + std::to_string(loc.back().line) + ")";
  return w;
}

std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

}  // namespace

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

void print_table(std::ostream& os, const std::vector<FileReport>& files, bool verbose) {
  size_t kernels = 0, findings = 0, dirty = 0;
  for (auto& f : files) {
    os << "== " << f.path << " (" << f.cubins.size() << " cubin" << (f.cubins.size() == 1 ? "" : "s") << ")\n";
    char line[512];
    std::snprintf(line, sizeof line, "  %-7s %7s %9s  %s\n", "arch", "instrs", "findings", "kernel");
    os << line;
    for (auto& k : f.kernels) {
      std::snprintf(line, sizeof line, "  %-7s %7zu %9zu  %s\n", k.arch.c_str(), k.instructions, k.findings.size(),
                    shorten(demangle(k.name), verbose ? 400 : 90).c_str());
      os << line;
      ++kernels;
      findings += k.findings.size();
      dirty += !k.findings.empty();
    }
  }
  if (findings) os << "\nFindings (rule a: control, b: memory, c: side-effect, d: variable-time)\n";
  for (auto& f : files)
    for (auto& k : f.kernels)
      for (auto& x : k.findings) {
        os << "  [" << x.rule << " " << rule_name(x.rule) << "] " << shorten(demangle(k.name), 70) << "  " << k.arch
           << "  " << hex(x.offset) << "  " << where(x.loc) << "\n";
        os << "      " << x.sass << "\n      " << x.reason << "\n";
        for (size_t i = 0; i < x.chain.size(); ++i)
          os << (i == 0 ? "      chain: " : "          -> ") << (x.chain[i].offset || !x.chain[i].loc.empty() ? hex(x.chain[i].offset) + " " : "")
             << x.chain[i].sass << "  " << (x.chain[i].loc.empty() ? "" : where(x.chain[i].loc)) << "\n";
        if (!x.chain.empty()) os << "          -> here\n";
      }
  os << "\nverdict: ";
  if (findings == 0)
    os << "CLEAN: " << kernels << " kernel" << (kernels == 1 ? "" : "s") << " in " << files.size() << " file"
       << (files.size() == 1 ? "" : "s") << ", no findings\n";
  else
    os << "LEAKS: " << findings << " finding" << (findings == 1 ? "" : "s") << " in " << dirty << " of " << kernels
       << " kernels (" << files.size() << " file" << (files.size() == 1 ? "" : "s") << ")\n";
}

void print_json(std::ostream& os, const std::vector<FileReport>& files) {
  size_t total = 0;
  os << "{\"files\":[";
  for (size_t fi = 0; fi < files.size(); ++fi) {
    auto& f = files[fi];
    os << (fi ? "," : "") << "{\"path\":" << q(f.path) << ",\"kernels\":[";
    for (size_t ki = 0; ki < f.kernels.size(); ++ki) {
      auto& k = f.kernels[ki];
      os << (ki ? "," : "") << "{\"name\":" << q(k.name) << ",\"demangled\":" << q(demangle(k.name))
         << ",\"arch\":" << q(k.arch) << ",\"instructions\":" << k.instructions << ",\"findings\":[";
      for (size_t xi = 0; xi < k.findings.size(); ++xi) {
        auto& x = k.findings[xi];
        ++total;
        os << (xi ? "," : "") << "{\"offset\":" << x.offset << ",\"sass\":" << q(x.sass) << ",\"rule\":"
           << q(std::string(1, x.rule) + ":" + rule_name(x.rule)) << ",\"reason\":" << q(x.reason)
           << ",\"file\":" << (x.loc.empty() ? "null" : q(x.loc[0].file))
           << ",\"line\":" << (x.loc.empty() ? "null" : std::to_string(x.loc[0].line)) << ",\"inlined_at\":[";
        for (size_t i = 1; i < x.loc.size(); ++i)
          os << (i > 1 ? "," : "") << "{\"file\":" << q(x.loc[i].file) << ",\"line\":" << x.loc[i].line << "}";
        os << "],\"chain\":[";
        for (size_t i = 0; i < x.chain.size(); ++i) {
          auto& c = x.chain[i];
          os << (i ? "," : "") << "{\"offset\":" << c.offset << ",\"sass\":" << q(c.sass) << ",\"file\":"
             << (c.loc.empty() ? "null" : q(c.loc[0].file))
             << ",\"line\":" << (c.loc.empty() ? "null" : std::to_string(c.loc[0].line)) << "}";
        }
        os << "]}";
      }
      os << "]}";
    }
    os << "]}";
  }
  os << "],\"findings\":" << total << ",\"verdict\":" << q(total ? "leaks" : "clean") << "}\n";
}

}  // namespace dhp::audit
