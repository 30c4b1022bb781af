// Human table and JSON document for dhp-audit results.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "analysis.hpp"

namespace dhp::audit {

struct FileReport {
  std::string path;
  std::vector<std::string> cubins;
  std::vector<KernelReport> kernels;
};

void print_table(std::ostream& os, const std::vector<FileReport>& files, bool verbose);
void print_json(std::ostream& os, const std::vector<FileReport>& files);
std::string demangle(const std::string& name);

}  // namespace dhp::audit
