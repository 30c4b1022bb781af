// Locating and running cuobjdump / nvdisasm. See toolchain.hpp.
#include "toolchain.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>

#ifndef DHP_AUDIT_NVDISASM_DEFAULT
#define DHP_AUDIT_NVDISASM_DEFAULT ""
#endif
#ifndef DHP_AUDIT_CUOBJDUMP_DEFAULT
#define DHP_AUDIT_CUOBJDUMP_DEFAULT ""
#endif

namespace dhp::audit {
namespace fs = std::filesystem;
namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a command, returns its stdout; throws with its stderr on failure.
std::string run(const std::string& cmd) {
  static std::atomic<int> seq{0};
  std::string err_file = (fs::temp_directory_path() / ("dhp-audit-err-" + std::to_string(getpid()) + "-" +
                                                       std::to_string(seq++))).string();
  std::string full = cmd + " 2>" + shell_quote(err_file);
  FILE* p = popen(full.c_str(), "r");
  if (!p) throw AuditError("cannot run: " + cmd);
  std::string out;
  std::array<char, 1 << 16> buf;
  size_t got;
  while ((got = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), got);
  int status = pclose(p);
  std::ifstream ef(err_file);
  std::string err((std::istreambuf_iterator<char>(ef)), std::istreambuf_iterator<char>());
  fs::remove(err_file);
  if (status != 0) throw AuditError(cmd + " failed: " + err);
  return out;
}

bool executable(const std::string& p) { return !p.empty() && access(p.c_str(), X_OK) == 0; }

bool is_cubin(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char h[20] = {};
  f.read(reinterpret_cast<char*>(h), sizeof h);
  if (f.gcount() < 20) return false;
  bool elf = h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F';
  int machine = h[18] | (h[19] << 8);
  return elf && machine == 190;  // EM_CUDA
}

}  // namespace

std::string find_tool(const char* env_var, const char* configured, const char* name) {
  if (const char* e = std::getenv(env_var); e && *e) {
    if (!executable(e)) throw AuditError(std::string(env_var) + "=" + e + " is not an executable");
    return e;
  }
  if (executable(configured)) return configured;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t a = 0;
    while (a <= p.size()) {
      size_t b = p.find(':', a);
      if (b == std::string::npos) b = p.size();
      std::string cand = p.substr(a, b - a) + "/" + name;
      if (executable(cand)) return cand;
      a = b + 1;
    }
  }
  throw AuditError(std::string("cannot find ") + name +
                   ": install the CUDA toolkit or `pip install nvidia-cuda-nvdisasm "
                   "nvidia-cuda-cuobjdump`, or set " + env_var);
}

std::vector<Cubin> disassemble_file(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || access(path.c_str(), R_OK) != 0)
    throw AuditError(path + ": cannot read file");
  const std::string nvdisasm = find_tool("DHP_AUDIT_NVDISASM", DHP_AUDIT_NVDISASM_DEFAULT, "nvdisasm");
  std::vector<Cubin> out;
  if (is_cubin(path)) {
    out.push_back({fs::path(path).filename().string(), run(shell_quote(nvdisasm) + " -c -gi " + shell_quote(path))});
    return out;
  }
  const std::string cuobjdump = find_tool("DHP_AUDIT_CUOBJDUMP", DHP_AUDIT_CUOBJDUMP_DEFAULT, "cuobjdump");
  char tmpl[] = "/tmp/dhp-audit-XXXXXX";
  if (!mkdtemp(tmpl)) throw AuditError("cannot create a temporary directory");
  fs::path dir = tmpl;
  std::string abs = fs::absolute(path).string();
  try {
    run("cd " + shell_quote(dir.string()) + " && " + shell_quote(cuobjdump) + " -xelf all " + shell_quote(abs) +
        " >/dev/null");
  } catch (const AuditError&) {
    // cuobjdump fails on files without device code; reported below as "no SASS".
  }
  std::vector<fs::path> cubins;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) cubins.push_back(e.path());
  std::sort(cubins.begin(), cubins.end());
  try {
    // nvdisasm is the slow part: one process per cubin, all cores busy.
    std::vector<std::future<Cubin>> jobs;
    for (auto& c : cubins)
      if (is_cubin(c.string()))
        jobs.push_back(std::async(std::launch::async, [&, c] {
          return Cubin{fs::path(path).filename().string() + ": " + c.filename().string(),
                       run(shell_quote(nvdisasm) + " -c -gi " + shell_quote(c.string()))};
        }));
    for (auto& j : jobs) out.push_back(j.get());
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  if (out.empty()) throw AuditError(path + ": no SASS (no cubin inside)");
  return out;
}

}  // namespace dhp::audit
