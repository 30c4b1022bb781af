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

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

template <typename U>
U le(const std::string& b, size_t at) {
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(static_cast<unsigned char>(b[at + i])) << (8 * i);
  return v;
}

// The fatbinary containers (magic 0xBA55ED50, then version, header size and
// payload size) inside a 64-bit little-endian host ELF's .nv_fatbin /
// __nv_relfatbin sections: one per translation unit. Empty when the file is
// not such an ELF (a fatbinary file is then handed to cuobjdump as is).
std::vector<std::string> fatbin_containers(const std::string& b) {
  std::vector<std::string> out;
  if (b.size() < 64 || b.compare(0, 4, "\x7f" "ELF") != 0 || b[4] != 2 || b[5] != 1) return out;
  const uint64_t shoff = le<uint64_t>(b, 0x28);
  const uint16_t shentsize = le<uint16_t>(b, 0x3A), shnum = le<uint16_t>(b, 0x3C), shstrndx = le<uint16_t>(b, 0x3E);
  if (shoff == 0 || shentsize < 64 || shoff + uint64_t(shnum) * shentsize > b.size() || shstrndx >= shnum) return out;
  auto sh = [&](size_t i, size_t field) { return shoff + i * shentsize + field; };
  const uint64_t str_off = le<uint64_t>(b, sh(shstrndx, 24));
  for (size_t i = 0; i < shnum; ++i) {
    const uint32_t name = le<uint32_t>(b, sh(i, 0));
    const uint64_t off = le<uint64_t>(b, sh(i, 24)), size = le<uint64_t>(b, sh(i, 32));
    if (str_off + name >= b.size() || off + size > b.size()) continue;
    const std::string sec = b.c_str() + str_off + name;
    if (sec != ".nv_fatbin" && sec != "__nv_relfatbin") continue;
    for (uint64_t at = off; at + 16 <= off + size;) {
      if (le<uint32_t>(b, at) == 0xBA55ED50u) {
        const uint64_t total = le<uint16_t>(b, at + 6) + le<uint64_t>(b, at + 8);
        if (total == 0 || at + total > off + size) break;
        out.push_back(b.substr(at, total));
        at += (total + 7) & ~uint64_t(7);
      } else {
        at += 8;
      }
    }
  }
  return out;
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
  // One directory per fatbinary container: cuobjdump names extracted cubins
  // after their source file, so two translation units with the same file
  // name would overwrite each other's cubins in one directory.
  std::vector<std::string> containers = fatbin_containers(read_file(path));
  std::vector<fs::path> sources;
  if (containers.empty()) {
    sources.push_back(fs::absolute(path));
  } else {
    for (size_t i = 0; i < containers.size(); ++i) {
      fs::path f = dir / (std::string("container") + std::to_string(i) + ".fatbin");
      std::ofstream(f, std::ios::binary).write(containers[i].data(), static_cast<std::streamsize>(containers[i].size()));
      sources.push_back(f);
    }
  }
  std::vector<std::pair<fs::path, std::string>> cubins;  // file, label
  try {
    for (size_t i = 0; i < sources.size(); ++i) {
      fs::path sub = dir / (std::string("x") + std::to_string(i));
      fs::create_directory(sub);
      size_t listed = 0;
      try {
        run("cd " + shell_quote(sub.string()) + " && " + shell_quote(cuobjdump) + " -xelf all " +
            shell_quote(sources[i].string()) + " >/dev/null");
        std::string list = run(shell_quote(cuobjdump) + " -lelf " + shell_quote(sources[i].string()));
        for (size_t at = list.find("ELF file"); at != std::string::npos; at = list.find("ELF file", at + 1)) ++listed;
      } catch (const AuditError&) {
        // cuobjdump fails on files without device code; reported below as "no SASS".
      }
      size_t got = 0;
      std::vector<fs::path> here;
      for (auto& e : fs::directory_iterator(sub))
        if (e.is_regular_file()) here.push_back(e.path());
      std::sort(here.begin(), here.end());
      for (auto& c : here)
        if (is_cubin(c.string())) {
          ++got;
          std::string label = fs::path(path).filename().string() + ": ";
          if (sources.size() > 1) label += std::string("#") + std::to_string(i) + " ";
          cubins.push_back({c, label + c.filename().string()});
        }
      if (got < listed)
        throw AuditError(path + ": " + std::to_string(listed) + " cubins listed but only " + std::to_string(got) +
                         " extracted (same-named cubins in one fatbinary); refusing to audit a subset");
    }
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  try {
    // nvdisasm is the slow part: one process per cubin, all cores busy.
    std::vector<std::future<Cubin>> jobs;
    for (auto& c : cubins)
      jobs.push_back(std::async(std::launch::async, [&, c] {
        return Cubin{c.second, run(shell_quote(nvdisasm) + " -c -gi " + shell_quote(c.first.string()))};
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
