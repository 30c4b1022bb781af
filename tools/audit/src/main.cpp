// dhp-audit: static constant-time audit of the SASS in cubins, objects,
// fatbinaries, shared libraries and executables.
//
//   dhp-audit [--json] [--public FILE] [--sass-text] [--verbose] FILE...
//
// Exit status: 0 when every kernel is clean, 1 when anything is found, 2 on
// error (unreadable file, no SASS, a tool missing or failing).
#include <fnmatch.h>

#include <fstream>
#include <future>
#include <iostream>
#include <sstream>

#include "analysis.hpp"
#include "report.hpp"
#include "sass.hpp"
#include "toolchain.hpp"

using namespace dhp::audit;

namespace {

const char* kUsage =
    "usage: dhp-audit [--json] [--public FILE] [--sass-text] [--verbose] FILE...\n"
    "\n"
    "Audits every kernel, for every architecture, in each FILE (cubin, object,\n"
    "fatbinary, shared library or executable) for constant-time violations:\n"
    "  a control       branch/call/return/exit whose guard, condition or target is secret\n"
    "  b memory        memory access whose address or guard is secret\n"
    "  c side-effect   other side-effecting instruction under a secret guard\n"
    "  d variable-time call into an IEEE division / square-root slow path, or\n"
    "                  into a routine outside the kernel (printf, malloc, ...)\n"
    "Secret: every value loaded from memory, user __constant__ data (constant\n"
    "bank 3). Public: parameters, driver constants, special registers, immediates.\n"
    "\n"
    "  --json        print one JSON document instead of the table\n"
    "  --public FILE declare public pointer parameters, one line per rule:\n"
    "                  <kernel-name-glob> <param-byte-offset>[,<offset>...]\n"
    "                a load whose address derives from such a pointer is public\n"
    "  --sass-text   FILEs are `nvdisasm -c -gi` text, not binaries\n"
    "  --verbose     full kernel names in the table\n"
    "exit status: 0 clean, 1 findings, 2 error\n";

struct PublicRule {
  std::string glob;
  std::vector<int64_t> offsets;
};

std::vector<PublicRule> read_public(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw AuditError(path + ": cannot read the public-pointer declarations");
  std::vector<PublicRule> rules;
  std::string line;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    std::istringstream in(line);
    PublicRule r;
    std::string offs;
    if (!(in >> r.glob)) continue;
    if (!(in >> offs)) throw AuditError(path + ":" + std::to_string(n) + ": expected <kernel-glob> <offset>[,...]");
    std::istringstream os(offs);
    std::string o;
    while (std::getline(os, o, ',')) {
      try {
        r.offsets.push_back(std::stoll(o, nullptr, 0));
      } catch (...) {
        throw AuditError(path + ":" + std::to_string(n) + ": bad offset '" + o + "'");
      }
    }
    rules.push_back(r);
  }
  return rules;
}

PublicPointers public_for(const std::vector<PublicRule>& rules, const std::string& kernel) {
  PublicPointers p;
  std::string dem = demangle(kernel);
  for (auto& r : rules)
    if (fnmatch(r.glob.c_str(), kernel.c_str(), 0) == 0 || fnmatch(r.glob.c_str(), dem.c_str(), 0) == 0)
      p.param_offsets.insert(p.param_offsets.end(), r.offsets.begin(), r.offsets.end());
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false, sass_text = false, verbose = false;
  std::vector<std::string> inputs;
  std::vector<PublicRule> rules;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--json") json = true;
      else if (a == "--sass-text") sass_text = true;
      else if (a == "--verbose") verbose = true;
      else if (a == "--public" && i + 1 < argc) {
        auto more = read_public(argv[++i]);
        rules.insert(rules.end(), more.begin(), more.end());
      } else if (a == "-h" || a == "--help") {
        std::cout << kUsage;
        return 0;
      } else if (!a.empty() && a[0] == '-') {
        std::cerr << "dhp-audit: unknown option " << a << "\n" << kUsage;
        return 2;
      } else {
        inputs.push_back(a);
      }
    }
    if (inputs.empty()) {
      std::cerr << kUsage;
      return 2;
    }
    std::vector<FileReport> files;
    for (auto& path : inputs) {
      FileReport fr;
      fr.path = path;
      std::vector<Cubin> cubins;
      if (sass_text) {
        std::ifstream f(path);
        if (!f) throw AuditError(path + ": cannot read file");
        cubins.push_back({path, std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>())});
      } else {
        cubins = disassemble_file(path);
      }
      // One analysis per cubin, in parallel.
      std::vector<std::future<std::vector<KernelReport>>> jobs;
      for (auto& c : cubins) {
        fr.cubins.push_back(c.label);
        jobs.push_back(std::async(std::launch::async, [&c, &rules] {
          Module m = parse_nvdisasm(c.sass);
          std::vector<KernelReport> out;
          for (auto& k : m.kernels) out.push_back(audit_kernel(k, m, public_for(rules, k.name)));
          return out;
        }));
      }
      size_t n_kernels = 0;
      for (auto& j : jobs) {
        auto ks = j.get();
        n_kernels += ks.size();
        fr.kernels.insert(fr.kernels.end(), ks.begin(), ks.end());
      }
      if (n_kernels == 0) throw AuditError(path + ": no kernels in its SASS");
      files.push_back(std::move(fr));
    }
    if (json) print_json(std::cout, files);
    else print_table(std::cout, files, verbose);
    for (auto& f : files)
      for (auto& k : f.kernels)
        if (!k.findings.empty()) return 1;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "dhp-audit: error: " << e.what() << "\n";
    return 2;
  }
}
