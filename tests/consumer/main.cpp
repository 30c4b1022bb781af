#include <cstdio>
#include <cstring>

#include "dhp/attention.h"
#include "dhp/attention.hpp"

int main() {
  // An invalid call must be rejected by name through both front ends.
  dhp::Params p = dhp::make_params(dhp::DType::kFloat16, 1, 16, 16, 3, 2, 128, nullptr, nullptr,
                                   nullptr, nullptr);
  const dhp::Status s = dhp::validate(p);
  char msg[256];
  const dhp_status c = dhp_attention_validate(&p, msg, sizeof msg);
  std::printf("consumer: %s / %s\n", s.message.c_str(), msg);
  // H_q = 3 is not a multiple of H_kv = 2: both messages must name heads_q.
  const bool named = s.message.find("heads_q") != std::string::npos && std::strstr(msg, "heads_q") != nullptr;
  return (s.code == DHP_ERROR_INVALID_ARGUMENT && c == s.code && named) ? 0 : 1;
}
