// An environment setting for one scope: the library reads its A/B knobs
// (DHP_SM90_DECODE_LOCAL, DHP_SM90_COMBINE_PDL, DHP_DEADLINE_PDL) at every
// call, so a test can run both settings in one process. Restores the
// previous value (or its absence) on exit.
#pragma once
#include <cstdlib>
#include <string>

namespace dhp::testing {

class EnvSetting {
 public:
  EnvSetting(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~EnvSetting() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  EnvSetting(const EnvSetting&) = delete;
  EnvSetting& operator=(const EnvSetting&) = delete;

 private:
  std::string name_;
  bool had_ = false;
  std::string old_;
};

}  // namespace dhp::testing
