// C++ benchmark of the forward pass over the FlashAttention-3 grid (16k
// tokens, hidden 2048) and the floor configuration. Prints a table
// and writes TSV rows (to --out FILE) for the comparison with PyTorch SDPA
// made by scripts/sdpa_compare.py in the same run on the same GPU.
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "harness.hpp"
#include "timing.hpp"

int main(int argc, char** argv) {
  using namespace dhp;
  bool quick = false;
  const char* out_path = nullptr;
  const char* only = nullptr;  // dense | lengths | graph: rows of that mode only
  std::vector<std::string> custom;  // --case B,H,S,D[,causal[,graph]]: fp16 rows instead of the grid
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--case") && i + 1 < argc) custom.push_back(argv[++i]);
    else {
      std::fprintf(stderr, "usage: dhp_bench [--quick] [--only dense|lengths|graph] [--case B,H,S,D[,causal[,graph[,lengths]]]]... [--out FILE.tsv]\n");
      return 2;
    }
  }
  // --case rows, checked before anything runs: B,H,S,D[,causal[,graph[,lengths]]]
  // (lengths: 0 none, 1 separate random, 2 shared random).
  std::vector<std::array<long long, 7>> specs;
  for (const std::string& spec : custom) {  // e.g. 16,8,1024,64,0,1 = B16 H8 S1024 D64 non-causal, graph replay
    std::array<long long, 7> v = {0, 0, 0, 0, 0, 0, 0};
    const int n = std::sscanf(spec.c_str(), "%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3], &v[4],
                              &v[5], &v[6]);
    if (n < 4 || v[0] < 1 || v[1] < 1 || v[2] < 1 || v[3] < 1 || v[6] < 0 || v[6] > 2) {
      std::fprintf(stderr, "--case %s: want B,H,S,D[,causal[,graph[,lengths]]] with positive B, H, S, D and lengths 0-2\n",
                   spec.c_str());
      return 2;
    }
    specs.push_back(v);
  }
  if (!testing::cuda_device_available()) {
    std::printf("skipped: no CUDA device\n");
    return 0;
  }
  std::printf("device: %s\n", testing::device_description().c_str());
  std::vector<testing::Case> cases;
  std::vector<int> graph_launches;  // per case: 0 = one call per sample
  auto add = [&](DType dt, int64_t B, int64_t H, int64_t S, int64_t D, bool causal,
                 testing::Lengths lengths = testing::Lengths::kNone, int graph = 0) {
    testing::Case c;
    c.dtype = dt; c.batch = B; c.heads_q = c.heads_kv = H; c.seqlen_q = c.seqlen_k = S;
    c.head_dim = D; c.causal = causal; c.lengths = lengths;
    cases.push_back(c);
    graph_launches.push_back(graph);
  };
  // The standard rows: the FA3 grid and the side figures.
  auto add_grid = [&] {
    add(DType::kFloat16, 4, 16, 4096, 128, false);  // the portable kernel's floor configuration
    const std::vector<int64_t> seqs = quick ? std::vector<int64_t>{512, 4096}
                                            : std::vector<int64_t>{512, 1024, 2048, 4096, 8192, 16384};
    for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
      if (quick && dt == DType::kBFloat16) break;
      for (int64_t D : {64, 128, 256})
        for (bool causal : {false, true})
          for (int64_t S : seqs) add(dt, 16384 / S, 2048 / D, S, D, causal);
    }
    // The other figures: secret lengths (random; separate for q and k,
    // shared when causal so the diagonal stays public) at S_max = 4096, D = 128
    // -- compare with the dense rows above; and the small configuration per
    // call as a CUDA graph replay.
    // Each lengths row right after a dense run of the same shape: the ratio
    // compares the two in the same thermal state (a dense row from the start
    // of a 72-row run read 3-6 % faster than one taken at its end).
    for (bool causal : {false, true}) {
      add(DType::kFloat16, 4, 16, 4096, 128, causal);
      add(DType::kFloat16, 4, 16, 4096, 128, causal, causal ? testing::Lengths::kShared : testing::Lengths::kSeparate);
    }
    add(DType::kFloat16, 1, 8, 512, 64, false, testing::Lengths::kNone, 20);
    // With --only graph, the same launch at other lengths: the slope is the
    // cost of a key tile on one CTA's chain, the intercept the fixed cost.
    if (only != nullptr && !std::strcmp(only, "graph"))
      for (int64_t S : {128, 256, 1024, 2048}) add(DType::kFloat16, 1, 8, S, 64, false, testing::Lengths::kNone, 20);
  };
  if (specs.empty()) add_grid();
  for (const auto& v : specs)
    add(DType::kFloat16, v[0], v[1], v[2], v[3], v[4] != 0,
        v[6] == 1 ? testing::Lengths::kSeparate : v[6] == 2 ? testing::Lengths::kShared : testing::Lengths::kNone,
        v[5] != 0 ? 20 : 0);
  FILE* out = out_path ? std::fopen(out_path, "w") : nullptr;
  if (out) std::fprintf(out, "dtype\tB\tH\tS\tD\tcausal\tmedian_ms\tmin_ms\ttflops\tmode\n");
  std::printf("%-5s %3s %3s %6s %4s %6s %10s %8s\n", "dtype", "B", "H", "S", "D", "causal", "median_ms", "TFLOP/s");
  for (size_t i = 0; i < cases.size(); ++i) {
    const testing::Case& c = cases[i];
    const char* mode = graph_launches[i] > 0 ? "graph" : (c.lengths != testing::Lengths::kNone ? "lengths" : "dense");
    if (only != nullptr && std::strcmp(only, mode) != 0) continue;
    const tools::Timing t = tools::time_case(c, 5, quick ? 20 : 30, graph_launches[i]);
    const char* dt = c.dtype == DType::kFloat16 ? "fp16" : "bf16";
    if (!t.error.empty()) {
      std::printf("%-5s %3lld %3lld %6lld %4lld %6d ERROR %s\n", dt, (long long)c.batch,
                  (long long)c.heads_q, (long long)c.seqlen_q, (long long)c.head_dim, c.causal,
                  t.error.c_str());
      continue;
    }
    std::printf("%-5s %3lld %3lld %6lld %4lld %6d %10.4f %8.1f %s\n", dt, (long long)c.batch,
                (long long)c.heads_q, (long long)c.seqlen_q, (long long)c.head_dim, c.causal,
                t.median_ms, t.tflops, mode);
    std::fflush(stdout);
    if (out)
      std::fprintf(out, "%s\t%lld\t%lld\t%lld\t%lld\t%d\t%.5f\t%.5f\t%.2f\t%s\n", dt, (long long)c.batch,
                   (long long)c.heads_q, (long long)c.seqlen_q, (long long)c.head_dim, c.causal,
                   t.median_ms, t.min_ms, t.tflops, mode);
  }
  if (out) std::fclose(out);
  return 0;
}
