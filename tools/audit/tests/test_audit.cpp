// dhp-audit unit tests: operand parsing, opcode semantics, and the analysis
// on small hand-written SASS listings in nvdisasm's format. Each analysis
// test has a twin that differs only in where a value comes from, so a test
// that passes because nothing is ever flagged (or everything is) fails.
#include <gtest/gtest.h>

#include <sstream>

#include "analysis.hpp"
#include "isa.hpp"
#include "sass.hpp"

using namespace dhp::audit;

namespace {

// Wraps instruction lines into an sm_90a listing of kernel "k".
std::string listing(const std::string& body, const std::string& extra_functions = "") {
  return "\t.target\tsm_90a\n"
         "//--------------------- .text.k --------------------------\n"
         "        .type           k,@function\n"
         "k:\n" +
         body + extra_functions;
}

KernelReport audit(const std::string& body, const std::string& extra = "", PublicPointers pub = {}) {
  Module m = parse_nvdisasm(listing(body, extra));
  EXPECT_EQ(m.kernels.size(), 1u);
  return audit_kernel(m.kernels.at(0), m, pub);
}

// Exactly one finding, of `rule`, at `offset` (any offset when negative).
::testing::AssertionResult one_finding(const KernelReport& r, char rule, int64_t offset = -1) {
  if (r.findings.size() != 1) return ::testing::AssertionFailure() << r.findings.size() << " findings, not 1";
  const auto& f = r.findings[0];
  if (f.rule != rule) return ::testing::AssertionFailure() << "rule " << f.rule << ", not " << rule;
  if (offset >= 0 && static_cast<int64_t>(f.offset) != offset) {
    std::ostringstream m;  // one stream: AssertionResult drops manipulators between insertions
    m << std::hex << "offset 0x" << f.offset << ", not 0x" << offset;
    return ::testing::AssertionFailure() << m.str();
  }
  return ::testing::AssertionSuccess();
}

// Thread id -> address of a[tid] in R2:R3; loads a secret x into R0.
const char* kLoadSecret =
    "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
    "        /*0010*/                   S2R R5, SR_TID.X ;\n"
    "        /*0020*/                   LDC.64 R2, c[0x0][0x210] ;\n"
    "        /*0030*/                   ULDC.64 UR4, c[0x0][0x208] ;\n"
    "        /*0040*/                   IMAD.WIDE.U32 R2, R5, 0x4, R2 ;\n"
    "        /*0050*/                   LDG.E R0, desc[UR4][R2.64] ;\n";

}  // namespace

TEST(AuditParse, Operands) {
  Operand m = parse_operand("desc[UR4][R2.64+0x10]");
  EXPECT_EQ(m.kind, OperandKind::Memory);
  ASSERT_EQ(m.regs.size(), 1u);
  EXPECT_EQ(m.regs[0].file, RegFile::R);
  EXPECT_EQ(m.regs[0].index, 2);
  EXPECT_EQ(m.regs[0].width, 2);
  EXPECT_EQ(m.mem_imm, 0x10);
  ASSERT_EQ(m.desc_regs.size(), 1u);
  EXPECT_EQ(m.desc_regs[0].file, RegFile::UR);
  EXPECT_EQ(m.desc_regs[0].width, 2);  // UR4:UR5, the upper half the cache policy

  Operand c = parse_operand("c[0x0][0x28]");
  EXPECT_EQ(c.kind, OperandKind::Constant);
  EXPECT_EQ(c.const_bank, 0);
  EXPECT_EQ(c.const_offset, 0x28);
  EXPECT_FALSE(c.const_indexed);
  Operand ci = parse_operand("c[0x3][R4+0x10]");
  EXPECT_TRUE(ci.const_indexed);
  EXPECT_EQ(ci.const_bank, 3);

  Operand p = parse_operand("!P3");
  EXPECT_EQ(p.kind, OperandKind::Register);
  EXPECT_TRUE(p.negated);
  EXPECT_EQ(p.regs[0].file, RegFile::P);
  EXPECT_EQ(parse_operand("|R7|.reuse").regs.at(0).index, 7);
  EXPECT_TRUE(parse_operand("RZ").regs.at(0).is_zero());
  EXPECT_TRUE(parse_operand("UPT").regs.at(0).is_zero());
  EXPECT_EQ(parse_operand("`(.L_x_3)").target, ".L_x_3");
  EXPECT_EQ(parse_operand("PR").kind, OperandKind::PredGroup);
  EXPECT_EQ(parse_operand("SR_TID.X").kind, OperandKind::Special);
  EXPECT_EQ(parse_operand("0x7fffffff").kind, OperandKind::Immediate);
  EXPECT_EQ(parse_operand("+INF ").kind, OperandKind::Immediate);
  EXPECT_EQ(parse_operand("gdesc[UR4]").desc_regs.at(0).width, 4);
}

TEST(AuditParse, InstructionGuardAndAnnotations) {
  Instruction i = parse_instruction("@!P0 LDL R169, [R1+0x8]                (*\"SpillRefill\"*);");
  EXPECT_TRUE(i.guarded);
  EXPECT_TRUE(i.guard_negated);
  EXPECT_EQ(i.guard.index, 0);
  EXPECT_EQ(i.base, "LDL");
  ASSERT_EQ(i.ops.size(), 2u);
  EXPECT_EQ(i.text, "@!P0 LDL R169, [R1+0x8]");
}

TEST(AuditSemantics, DefsUsesWidths) {
  auto s = semantics_of(parse_instruction("ISETP.GE.AND P0, PT, R1, R2, PT"));
  ASSERT_EQ(s.defs.size(), 2u);
  EXPECT_EQ(s.defs[0].file, RegFile::P);
  EXPECT_EQ(s.uses.size(), 3u);  // R1, R2, PT

  s = semantics_of(parse_instruction("IADD3 R4, P0, P1, R2, R3, RZ"));
  EXPECT_EQ(s.defs.size(), 3u);  // R4 and two carry-outs
  s = semantics_of(parse_instruction("IADD3.X R5, R3, R7, RZ, P0, !PT"));
  EXPECT_EQ(s.defs.size(), 1u);  // carry-in P0 is a use
  EXPECT_EQ(s.uses.size(), 5u);

  s = semantics_of(parse_instruction("IMAD.WIDE.U32 R2, R3, 0x4, R4"));
  EXPECT_EQ(s.defs.at(0).width, 2);
  EXPECT_EQ(s.uses.at(1).width, 2);  // R4:R5
  s = semantics_of(parse_instruction("LDG.E.128 R8, desc[UR4][R2.64]"));
  EXPECT_EQ(s.defs.at(0).width, 4);
  EXPECT_EQ(s.source, Source::Load);
  EXPECT_TRUE(s.memory);
  EXPECT_EQ(s.addr.size(), 2u);  // R2:R3 and the descriptor UR4
  s = semantics_of(parse_instruction("HMMA.16816.F32 R4, R8, R12, R4"));
  EXPECT_EQ(s.defs.at(0).width, 4);
  s = semantics_of(parse_instruction("LDSM.16.MT88.4 R4, [R2+0x100]"));
  EXPECT_EQ(s.defs.at(0).width, 4);
  s = semantics_of(parse_instruction("HGMMA.64x128x16.F32.BF16 R24, gdesc[UR4], R24, gsb0"));
  EXPECT_EQ(s.defs.at(0).width, 64);
  EXPECT_TRUE(s.memory);
  s = semantics_of(parse_instruction("VOTE.ANY R4, PT, P0"));
  EXPECT_EQ(s.defs.size(), 2u);
  EXPECT_EQ(s.uses.size(), 1u);
  s = semantics_of(parse_instruction("SHFL.BFLY PT, R3, R2, 0x1, 0x1f"));
  EXPECT_EQ(s.defs.size(), 2u);
  EXPECT_TRUE(s.register_only);
  s = semantics_of(parse_instruction("LDGSTS.E.BYPASS.128 [R7], desc[UR6][R4.64]"));
  EXPECT_TRUE(s.defs.empty());
  EXPECT_EQ(s.addr.size(), 3u);
  s = semantics_of(parse_instruction("UTMALDG.2D [UR12], [UR4]"));
  EXPECT_EQ(s.addr.at(0).width, 4);  // shared address, mbarrier, 2 coordinates
  s = semantics_of(parse_instruction("STG.E desc[UR4][R2.64], R9"));
  EXPECT_FALSE(s.register_only);
  EXPECT_EQ(s.control, Control::None);
  s = semantics_of(parse_instruction("@P0 BRA !P2, `(.L_x_1)"));
  EXPECT_EQ(s.control, Control::Branch);
  EXPECT_EQ(s.cond.size(), 1u);
  EXPECT_EQ(s.target, ".L_x_1");
  EXPECT_TRUE(is_variable_time_routine("$__internal_1_$__cuda_sm3x_div_rn_noftz_f32_slowpath"));
  EXPECT_FALSE(is_variable_time_routine(".L_x_3"));
}

// R2P / P2R move predicates through a register under an immediate mask; the
// mask decides which predicates are written or read (a P2R that saves a
// public predicate must not pick up a secret R2P wrote into another one).
TEST(AuditSemantics, PredicateRegisterMovesFollowTheirMask) {
  auto s = semantics_of(parse_instruction("R2P PR, R89, 0x7e"));
  EXPECT_FALSE(s.weak_defs);
  ASSERT_EQ(s.defs.size(), 6u);  // P1..P6
  EXPECT_EQ(s.defs.front().index, 1);
  EXPECT_EQ(s.defs.back().index, 6);
  ASSERT_EQ(s.uses.size(), 1u);
  EXPECT_EQ(s.uses[0].index, 89);
  s = semantics_of(parse_instruction("P2R R173, PR, RZ, 0x2"));
  ASSERT_EQ(s.defs.size(), 1u);
  EXPECT_EQ(s.defs[0].index, 173);
  bool reads_p1 = false, reads_other = false;
  for (auto& r : s.uses)
    if (r.file == RegFile::P) (r.index == 1 ? reads_p1 : reads_other) = true;
  EXPECT_TRUE(reads_p1);
  EXPECT_FALSE(reads_other);
}

TEST(AuditAnalysis, SecretBranchIsFlaggedPublicBranchIsNot) {
  const std::string tail =
      "        /*0060*/                   ISETP.GT.AND P0, PT, R0, RZ, PT ;\n"
      "        /*0070*/               @P0 BRA `(.L_x_1) ;\n"
      "        /*0080*/                   STG.E desc[UR4][R2.64], R0 ;\n"
      ".L_x_1:\n"
      "        /*0090*/                   EXIT ;\n";
  KernelReport secret = audit(kLoadSecret + tail);
  ASSERT_EQ(secret.findings.size(), 1u);
  EXPECT_EQ(secret.findings[0].rule, 'a');
  EXPECT_EQ(secret.findings[0].offset, 0x70u);
  ASSERT_EQ(secret.findings[0].chain.size(), 2u);  // LDG -> ISETP
  EXPECT_EQ(secret.findings[0].chain[0].offset, 0x50u);
  // Same code, but R0 is the thread id: public.
  std::string pub = kLoadSecret;
  pub += "        /*0058*/                   S2R R0, SR_TID.X ;\n";
  EXPECT_TRUE(audit(pub + tail).findings.empty());
}

// A never-taken trap path (kernels::block_boundary) ends there: what it
// holds does not reach the code placed after it. BPT.INT (brkpt) may
// resume, so its twin falls through and carries the secret on.
TEST(AuditAnalysis, TrapEndsItsPathBreakpointDoesNot) {
  auto body = [](const char* bpt) {
    return std::string(kLoadSecret) +
           "        /*0060*/                   ISETP.GE.AND P0, PT, R5, RZ, PT ;\n"
           "        /*0070*/               @P0 BRA `(.L_x_2) ;\n"
           "        /*0080*/                   IMAD.MOV.U32 R2, RZ, RZ, R0 ;\n"
           "        /*0090*/                   " + std::string(bpt) + " 0x1 ;\n"
           ".L_x_2:\n"
           "        /*00a0*/                   LDS R7, [R2] ;\n"
           "        /*00b0*/                   EXIT ;\n";
  };
  EXPECT_TRUE(audit(body("BPT.TRAP")).findings.empty());
  KernelReport resumes = audit(body("BPT.INT"));
  ASSERT_EQ(resumes.findings.size(), 1u);
  EXPECT_EQ(resumes.findings[0].rule, 'b');
  EXPECT_EQ(resumes.findings[0].offset, 0xa0u);
}

TEST(AuditAnalysis, SelectAndPredicatedArithmeticAreClean) {
  KernelReport r = audit(std::string(kLoadSecret) +
                         "        /*0060*/                   FSETP.GT.AND P0, PT, R0, RZ, PT ;\n"
                         "        /*0070*/                   FSEL R6, R0, RZ, P0 ;\n"
                         "        /*0080*/               @P0 FADD R6, R6, 1 ;\n"
                         "        /*0090*/                   STG.E desc[UR4][R2.64], R6 ;\n"
                         "        /*00a0*/                   EXIT ;\n");
  EXPECT_TRUE(r.findings.empty());
}

TEST(AuditAnalysis, SecretAddressAndSecretGuardedStore) {
  KernelReport addr = audit(std::string(kLoadSecret) +
                            "        /*0060*/                   LOP3.LUT R6, R0, 0xff, RZ, 0xc0, !PT ;\n"
                            "        /*0070*/                   LDS R7, [R6] ;\n"
                            "        /*0080*/                   EXIT ;\n");
  ASSERT_EQ(addr.findings.size(), 1u);
  EXPECT_EQ(addr.findings[0].rule, 'b');
  KernelReport guarded = audit(std::string(kLoadSecret) +
                               "        /*0060*/                   ISETP.NE.AND P1, PT, R0, RZ, PT ;\n"
                               "        /*0070*/               @P1 BAR.ARV 0x1, 0x40 ;\n"
                               "        /*0080*/                   EXIT ;\n");
  ASSERT_EQ(guarded.findings.size(), 1u);
  EXPECT_EQ(guarded.findings[0].rule, 'a');  // barriers count as control
}

TEST(AuditAnalysis, GuardCorrelatedCarryIsPublic) {
  // @P1 LEA writes carry P3; @P1 LEA.HI.X reads it. P3 held a secret before,
  // but under P1 the carry is the fresh, public one.
  const std::string pre = std::string(kLoadSecret) +
                          "        /*0060*/                   ISETP.GE.AND P3, PT, R0, RZ, PT ;\n"
                          "        /*0070*/                   ISETP.NE.AND P1, PT, R5, RZ, PT ;\n";
  const std::string post =
      "        /*0090*/               @P1 LEA.HI.X R9, R5, c[0x0][0x214], RZ, 0x2, P3 ;\n"
      "        /*00a0*/               @P1 STG.E desc[UR4][R8.64], R0 ;\n"
      "        /*00b0*/                   EXIT ;\n";
  EXPECT_TRUE(audit(pre + "        /*0080*/               @P1 LEA R8, P3, R5, c[0x0][0x210], 0x2 ;\n" + post)
                  .findings.empty());
  // Under the opposite guard the write does not cover the read: flagged.
  EXPECT_EQ(audit(pre + "        /*0080*/              @!P1 LEA R8, P3, R5, c[0x0][0x210], 0x2 ;\n" + post)
                .findings.size(),
            1u);
}

TEST(AuditAnalysis, StackSpillsKeepTheirTaint) {
  const std::string frame = std::string(kLoadSecret) +
                            "        /*0058*/                   IADD3 R1, R1, -0x20, RZ ;\n";
  const std::string reload =
      "        /*0070*/                   IMAD.MOV.U32 R6, RZ, RZ, RZ ;\n"
      "        /*0080*/                   LDL R6, [R1+0x8] ;\n"
      "        /*0090*/                   LDS R7, [R6] ;\n"
      "        /*00a0*/                   EXIT ;\n";
  // A public value (the thread id) spilled and refilled: clean.
  EXPECT_TRUE(audit(frame + "        /*0060*/                   STL [R1+0x8], R5 ;\n" + reload).findings.empty());
  // The secret spilled to the same slot: the refill is secret, so is the LDS address.
  EXPECT_EQ(audit(frame + "        /*0060*/                   STL [R1+0x8], R0 ;\n" + reload).findings.size(), 1u);
  // A slot never written reads as secret (uninitialised local memory).
  EXPECT_EQ(audit(frame + "        /*0060*/                   STL [R1+0xc], R5 ;\n" + reload).findings.size(), 1u);
  // sm_90 moves the stack pointer with a 32-bit VIADD: 0xffffffe0 is -0x20.
  const std::string viadd = std::string(kLoadSecret) +
                            "        /*0058*/                   VIADD R1, R1, 0xffffffe0 ;\n";
  EXPECT_TRUE(audit(viadd + "        /*0060*/                   STL [R1+0x8], R5 ;\n" + reload).findings.empty());
  EXPECT_EQ(audit(viadd + "        /*0060*/                   STL [R1+0x8], R0 ;\n" + reload).findings.size(), 1u);
  // A half-word store over a secret slot leaves half of the secret there;
  // a full-word store replaces it.
  const std::string secret_slot = frame + "        /*0060*/                   STL [R1+0x8], R0 ;\n";
  EXPECT_EQ(audit(secret_slot + "        /*0068*/                   STL.U16 [R1+0x8], R5 ;\n" + reload).findings.size(), 1u);
  EXPECT_TRUE(audit(secret_slot + "        /*0068*/                   STL [R1+0x8], R5 ;\n" + reload).findings.empty());
}

TEST(AuditAnalysis, SubroutinesAndVariableTimeCalls) {
  const std::string slow =
      "        .type           $__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath,@function\n"
      "$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath:\n"
      "        /*00c0*/                   FADD R9, R0, 1 ;\n"
      "        /*00d0*/                   RET.REL.NODEC R4 `(k) ;\n";
  KernelReport r = audit(std::string(kLoadSecret) +
                             "        /*0060*/                   MOV R4, 0x80 ;\n"
                             "        /*0070*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath) ;\n"
                             "        /*0080*/                   LDS R7, [R9] ;\n"
                             "        /*0090*/                   EXIT ;\n",
                         slow);
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[0].rule, 'd');  // the call, whatever its guard
  EXPECT_EQ(r.findings[1].rule, 'b');  // R9 computed from the secret inside the callee
}

TEST(AuditAnalysis, PublicLoopAndMbarrierWait) {
  // for (k = 0; k < n_param; ++k) plus an mbarrier try_wait spin loop.
  const std::string body =
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
      "        /*0010*/                   MOV R4, RZ ;\n"
      "        /*0020*/                   UMOV UR4, 0x400 ;\n"
      ".L_x_0:\n"
      "        /*0030*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R4 ;\n"
      "        /*0040*/              @!P0 BRA `(.L_x_0) ;\n"
      "        /*0050*/                   VIADD R4, R4, 0x1 ;\n"
      "        /*0060*/                   ISETP.GE.AND P1, PT, R4, c[0x0][0x218], PT ;\n"
      "        /*0070*/              @!P1 BRA `(.L_x_0) ;\n"
      "        /*0080*/                   EXIT ;\n";
  EXPECT_TRUE(audit(body).findings.empty());
}

TEST(AuditAnalysis, DeclaredPublicPointer) {
  // n = lens[blockIdx.x] through the parameter at offset 0x8; loop on n.
  const std::string body =
      "        /*0000*/                   S2R R5, SR_CTAID.X ;\n"
      "        /*0010*/                   LDC.64 R2, c[0x0][0x218] ;\n"
      "        /*0020*/                   ULDC.64 UR4, c[0x0][0x208] ;\n"
      "        /*0030*/                   IMAD.WIDE.U32 R2, R5, 0x4, R2 ;\n"
      "        /*0040*/                   LDG.E R0, desc[UR4][R2.64] ;\n"
      "        /*0050*/                   ISETP.GE.AND P0, PT, R0, 0x1, PT ;\n"
      "        /*0060*/              @!P0 EXIT ;\n"
      "        /*0070*/                   EXIT ;\n";
  EXPECT_EQ(audit(body).findings.size(), 1u);
  PublicPointers wrong{{0x0}};
  EXPECT_EQ(audit(body, "", wrong).findings.size(), 1u);
  PublicPointers lens{{0x8}};
  EXPECT_TRUE(audit(body, "", lens).findings.empty());
}

// Texture fetches: two destinations (the first may be RZ), then coordinates,
// LOD / gradients and the handle, all addresses. The generic table took RZ
// as the only destination and the coordinates as data.
TEST(AuditSemantics, TextureOperands) {
  auto s = semantics_of(parse_instruction("TEX.LL RZ, R7, R6, R2, UR4, 0x0, 2D, 0x1"));
  EXPECT_EQ(s.source, Source::Load);
  EXPECT_TRUE(s.memory);
  EXPECT_FALSE(s.register_only);
  ASSERT_EQ(s.defs.size(), 2u);
  EXPECT_EQ(s.defs[1].index, 7);  // the texel
  EXPECT_EQ(s.defs[1].width, 1);  // mask 0x1: one component
  ASSERT_EQ(s.addr.size(), 3u);   // coordinates R6:R7, LOD R2, handle UR4:UR5
  EXPECT_EQ(s.addr[0].width, 2);
  EXPECT_EQ(s.addr[2].file, RegFile::UR);
  EXPECT_EQ(s.addr[2].width, 2);
  EXPECT_TRUE(s.uses.empty());
  s = semantics_of(parse_instruction("TLD4.R R8, R6, R6, UR4, 0x0, 2D"));
  ASSERT_EQ(s.defs.size(), 2u);  // R8:R9 and R6:R7, four components
  EXPECT_EQ(s.defs[0].width + s.defs[1].width, 4);
  s = semantics_of(parse_instruction("TLD.SCR.B.LZ RZ, R7, R9, R4, 1D, 0x1"));  // sm_80: handle in R4
  ASSERT_EQ(s.addr.size(), 2u);
  EXPECT_EQ(s.addr[1].index, 4);
}

TEST(AuditAnalysis, TextureCoordinateAndTexel) {
  const std::string pre = std::string(kLoadSecret) + "        /*0060*/                   ULDC UR6, c[0x0][0x218] ;\n";
  // tex1Dfetch at the secret R0 (rule b) vs at the thread id R5 (clean).
  const std::string fetch_secret = "        /*0070*/                   TLD.LZ RZ, R9, R0, UR6, 0x0, 1D, 0x1 ;\n";
  const std::string fetch_public = "        /*0070*/                   TLD.LZ RZ, R9, R5, UR6, 0x0, 1D, 0x1 ;\n";
  const std::string store = "        /*0080*/                   STG.E desc[UR4][R2.64], R9 ;\n"
                            "        /*0090*/                   EXIT ;\n";
  KernelReport r = audit(pre + fetch_secret + store);
  ASSERT_TRUE(one_finding(r, 'b', 0x70));
  EXPECT_TRUE(audit(pre + fetch_public + store).findings.empty());
  // The texel is secret: branching on it is rule a (the texel of a fetch at
  // a public coordinate; its twin branches on the coordinate itself).
  const std::string branch = "        /*0080*/                   FSETP.GT.AND P0, PT, R9, RZ, PT ;\n"
                             "        /*0090*/               @P0 EXIT ;\n"
                             "        /*00a0*/                   EXIT ;\n";
  KernelReport t = audit(pre + fetch_public + branch);
  ASSERT_EQ(t.findings.size(), 1u);
  EXPECT_EQ(t.findings[0].rule, 'a');
  std::string on_coord = branch;
  on_coord.replace(on_coord.find("R9, RZ"), 2, "R5");
  EXPECT_TRUE(audit(pre + fetch_public + on_coord).findings.empty());
}

// Surfaces: the bracket's first register names the coordinate group (.2D:
// two registers), the handle follows the data (a UR, or an R on sm_80's .B
// forms), and SULD's result is secret.
TEST(AuditSemantics, SurfaceOperands) {
  auto s = semantics_of(parse_instruction("SULD.D.BA.2D.STRONG.SM.TRAP R7, [R6], UR6, 0x0"));
  EXPECT_EQ(s.source, Source::Load);
  ASSERT_EQ(s.defs.size(), 1u);
  EXPECT_EQ(s.defs[0].index, 7);
  ASSERT_EQ(s.addr.size(), 2u);
  EXPECT_EQ(s.addr[0].width, 2);  // x in R6, y in R7
  EXPECT_EQ(s.addr[1].file, RegFile::UR);
  s = semantics_of(parse_instruction("SUST.D.BA.1D.STRONG.SM.TRAP [R5], R0, R2"));
  EXPECT_TRUE(s.defs.empty());
  ASSERT_EQ(s.uses.size(), 1u);  // the data
  EXPECT_EQ(s.uses[0].index, 0);
  ASSERT_EQ(s.addr.size(), 2u);  // coordinate R5, handle R2
  EXPECT_EQ(s.addr[1].index, 2);
  s = semantics_of(parse_instruction("SUST.D.BA.3D.128.STRONG.SM.TRAP [R4], R8, UR6, 0x0"));
  EXPECT_EQ(s.uses.at(0).width, 4);
  EXPECT_EQ(s.addr.at(0).width, 3);
  // A bracket printed as a register list names every register in it.
  Operand m = parse_operand("[R2, R3]");
  ASSERT_EQ(m.regs.size(), 2u);
  EXPECT_EQ(m.regs[1].index, 3);
}

TEST(AuditAnalysis, SurfaceSecondCoordinate) {
  // y (R7) is the secret; x (R6) is the thread id.
  auto body = [](const char* y) {
    return std::string(kLoadSecret) + "        /*0060*/                   ULDC UR6, c[0x0][0x218] ;\n" +
           "        /*0070*/                   SHF.L.U32 R6, R5, 0x2, RZ ;\n" +
           "        /*0080*/                   MOV R7, " + y + " ;\n" +
           "        /*0090*/                   SULD.D.BA.2D.STRONG.SM.TRAP R9, [R6], UR6, 0x0 ;\n" +
           "        /*00a0*/                   STG.E desc[UR4][R2.64], R9 ;\n" +
           "        /*00b0*/                   EXIT ;\n";
  };
  KernelReport r = audit(body("R0"));
  ASSERT_TRUE(one_finding(r, 'b', 0x90));
  EXPECT_TRUE(audit(body("R5")).findings.empty());
}

// desc[UR6] is the 64-bit pair UR6:UR7; createpolicy's result lands in UR7.
TEST(AuditAnalysis, DescriptorUpperHalf) {
  auto body = [](const char* upper) {
    return std::string(kLoadSecret) + "        /*0060*/                   UMOV UR6, URZ ;\n" +
           "        /*0070*/                   R2UR UR7, " + upper + " ;\n" +
           "        /*0080*/                   LDG.E R9, desc[UR6][R2.64] ;\n" +
           "        /*0090*/                   STG.E desc[UR4][R2.64], R9 ;\n" +
           "        /*00a0*/                   EXIT ;\n";
  };
  KernelReport r = audit(body("R0"));
  ASSERT_TRUE(one_finding(r, 'b', 0x80));
  EXPECT_TRUE(audit(body("R5")).findings.empty());
}

// Conversion widths follow the opcode's type kinds, not the order of the
// modifiers: I2F.S64 is f32 <- s64, F2I.F64 is s32 <- f64.
TEST(AuditSemantics, ConversionWidths) {
  struct Case { const char* text; int dst, src; };
  for (const Case& c : {Case{"I2F.S64 R23, R10", 1, 2}, Case{"I2F.U64 R15, R14", 1, 2},
                        Case{"I2F.F64.S64 R18, R18", 2, 2}, Case{"I2F.F64 R20, R20", 2, 1},
                        Case{"I2F.F64.U32 R8, R8", 2, 1}, Case{"F2I.F64.TRUNC R23, R22", 1, 2},
                        Case{"F2I.U32.F64.TRUNC R25, R24", 1, 2}, Case{"F2I.S64.F64.TRUNC R28, R28", 2, 2},
                        Case{"F2I.S64.TRUNC R20, R20", 2, 1}, Case{"F2I.FTZ.U32.TRUNC.NTZ R3, R2", 1, 1},
                        Case{"F2F.F64.F32 R24, R24", 2, 1}, Case{"F2F.F32.F64 R29, R12", 1, 2},
                        Case{"FRND.F64.TRUNC R4, R2", 2, 2}, Case{"I2F.RP R4, R2", 1, 1}}) {
    auto s = semantics_of(parse_instruction(c.text));
    ASSERT_EQ(s.defs.size(), 1u) << c.text;
    EXPECT_EQ(s.defs[0].width, c.dst) << c.text;
    ASSERT_EQ(s.uses.size(), 1u) << c.text;
    EXPECT_EQ(s.uses[0].width, c.src) << c.text;
  }
}

TEST(AuditAnalysis, ConversionReadsTheHighWord) {
  // R6 = thread id (public), R7 = secret; I2F.S64 reads both.
  auto body = [](const char* hi) {
    return std::string(kLoadSecret) + "        /*0060*/                   MOV R6, R5 ;\n" +
           "        /*0070*/                   MOV R7, " + hi + " ;\n" +
           "        /*0080*/                   I2F.S64 R8, R6 ;\n" +
           "        /*0090*/                   F2I.TRUNC.NTZ R9, R8 ;\n" +
           "        /*00a0*/                   LDS R10, [R9] ;\n" +
           "        /*00b0*/                   EXIT ;\n";
  };
  KernelReport r = audit(body("R0"));
  ASSERT_TRUE(one_finding(r, 'b'));
  EXPECT_TRUE(audit(body("RZ")).findings.empty());
}

// Once a stack address is made generic (R1 + the local window base), a
// generic ST may write any stack slot; without that, ST cannot reach it.
TEST(AuditAnalysis, GenericStoreMayWriteTheStack) {
  auto body = [](bool escapes, const char* data) {
    return std::string(kLoadSecret) + "        /*0058*/                   IADD3 R1, R1, -0x20, RZ ;\n" +
           "        /*0060*/                   STL [R1+0x8], R5 ;\n" +
           (escapes ? "        /*0064*/                   IADD3 R12, R1, c[0x0][0x20], RZ ;\n" : "") +
           "        /*0068*/                   LDC.64 R8, c[0x0][0x218] ;\n" +
           "        /*0070*/                   ST.E desc[UR4][R8.64], " + data + " ;\n" +
           "        /*0080*/                   LDL R6, [R1+0x8] ;\n" +
           "        /*0090*/                   LDS R7, [R6] ;\n" +
           "        /*00a0*/                   EXIT ;\n";
  };
  KernelReport r = audit(body(true, "R0"));
  ASSERT_TRUE(one_finding(r, 'b', 0x90));
  ASSERT_FALSE(r.findings[0].chain.empty());
  EXPECT_EQ(r.findings[0].chain[0].offset, 0x50u);  // from the LDG, through the ST
  EXPECT_TRUE(audit(body(true, "R5")).findings.empty());   // a public value stored
  EXPECT_TRUE(audit(body(false, "R0")).findings.empty());  // no stack address escapes
}

// Constant bank 3 is user __constant__ data: secret. Bank 0 (parameters)
// and banks 2 / 4 (compiler constants, relocated addresses) are public.
TEST(AuditAnalysis, ConstantBank3IsSecret) {
  auto branch = [](const char* bank) {
    return std::string("        /*0000*/                   LDC R1, c[0x0][0x28] ;\n") +
           "        /*0010*/                   ISETP.GE.AND P0, PT, RZ, c[" + bank + "][0x10], PT ;\n" +
           "        /*0020*/               @P0 EXIT ;\n" +
           "        /*0030*/                   EXIT ;\n";
  };
  KernelReport r = audit(branch("0x3"));
  ASSERT_TRUE(one_finding(r, 'a'));
  ASSERT_EQ(r.findings[0].chain.size(), 1u);  // the ISETP that read bank 3
  EXPECT_EQ(r.findings[0].chain[0].offset, 0x10u);
  for (const char* pub : {"0x0", "0x2", "0x4"}) EXPECT_TRUE(audit(branch(pub)).findings.empty()) << pub;
  // LDC at a public index: the value is secret in bank 3 only.
  auto table = [](const char* bank) {
    return std::string("        /*0000*/                   S2R R5, SR_TID.X ;\n") +
           "        /*0010*/                   LDC R6, c[" + bank + "][R5] ;\n" +
           "        /*0020*/                   LDS R7, [R6] ;\n" +
           "        /*0030*/                   EXIT ;\n";
  };
  EXPECT_EQ(audit(table("0x3")).findings.size(), 1u);
  EXPECT_TRUE(audit(table("0x0")).findings.empty());
}

// A CALL whose callee is not code of the kernel (CALL.ABS through a register,
// as nvcc calls vprintf / malloc, or a symbol defined elsewhere) is rule d;
// a call to a subroutine of the kernel is not.
TEST(AuditAnalysis, ExternalCallsAreVariableTime) {
  const std::string pre = "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
                          "        /*0010*/                   LDC.64 R2, c[0x4][0x18] ;\n"
                          "        /*0020*/                   LEPC R20, `(.L_x_1) ;\n";
  const std::string post = ".L_x_1:\n"
                           "        /*0040*/                   EXIT ;\n";
  KernelReport abs = audit(pre + "        /*0030*/                   CALL.ABS.NOINC R2 ;\n" + post);
  ASSERT_EQ(abs.findings.size(), 1u);
  EXPECT_EQ(abs.findings[0].rule, 'd');
  KernelReport sym = audit(pre + "        /*0030*/                   CALL.REL.NOINC `(vprintf) ;\n" + post);
  ASSERT_EQ(sym.findings.size(), 1u);
  EXPECT_EQ(sym.findings[0].rule, 'd');
  const std::string sub = "        .type           helper,@function\n"
                          "helper:\n"
                          "        /*0050*/                   RET.REL.NODEC R20 `(k) ;\n";
  EXPECT_TRUE(audit(pre + "        /*0030*/                   CALL.REL.NOINC `(helper) ;\n" + post, sub).findings.empty());
  // A function pointer (CALL.REL through a register, an offset into the
  // kernel's code) may enter any subroutine: not external; a secret pointer
  // is a secret control operand.
  const std::string fp = "        /*0030*/                   CALL.REL.NOINC R8 `(k) ;\n";
  const std::string fp_pub = pre + "        /*0028*/                   S2R R8, SR_TID.X ;\n" + fp + post;
  EXPECT_TRUE(audit(fp_pub, sub).findings.empty());
  KernelReport fp_secret = audit(std::string(kLoadSecret) + "        /*0058*/                   MOV R8, R0 ;\n" +
                                     "        /*005c*/                   LEPC R20, `(.L_x_1) ;\n" + fp + post,
                                 sub);
  ASSERT_EQ(fp_secret.findings.size(), 1u);
  EXPECT_EQ(fp_secret.findings[0].rule, 'a');
}

// R2UR P0, UR6, R2 writes UR6 as well as P0; an opcode in no table with a
// predicate result then a register writes that register weakly.
TEST(AuditAnalysis, PredicateFirstResults) {
  auto s = semantics_of(parse_instruction("@P1 R2UR P0, UR6, R2"));
  ASSERT_EQ(s.defs.size(), 2u);
  EXPECT_EQ(s.defs[1].file, RegFile::UR);
  EXPECT_EQ(s.defs[1].index, 6);
  s = semantics_of(parse_instruction("FCHK P0, R2, R3"));  // all sources after P0
  EXPECT_EQ(s.defs.size(), 1u);
  s = semantics_of(parse_instruction("NEWOP P0, R4, R2"));  // unknown: R4 read and weakly written
  EXPECT_TRUE(s.weak_defs);
  ASSERT_EQ(s.defs.size(), 2u);
  bool r4 = false;
  for (auto& d : s.defs) r4 = r4 || (d.file == RegFile::R && d.index == 4);
  EXPECT_TRUE(r4);
  EXPECT_EQ(s.uses.size(), 2u);  // R4 and R2
  auto body = [](const char* src) {
    return std::string(kLoadSecret) + "        /*0060*/                   R2UR P0, UR6, " + src + " ;\n" +
           "        /*0070*/                   LDS R7, [UR6] ;\n" +
           "        /*0080*/                   EXIT ;\n";
  };
  KernelReport r = audit(body("R0"));
  ASSERT_TRUE(one_finding(r, 'b'));
  EXPECT_TRUE(audit(body("R5")).findings.empty());
}

// CCTL (prefetch, discard, applypriority) is a memory operation, not control.
TEST(AuditAnalysis, CacheControlIsMemory) {
  auto s = semantics_of(parse_instruction("CCTL.E.PF2 [R4]"));
  EXPECT_EQ(s.control, Control::None);
  EXPECT_TRUE(s.memory);
  auto body = [](const char* addr) {
    return std::string(kLoadSecret) + "        /*0060*/                   IMAD.WIDE R8, " + addr + ", 0x4, R2 ;\n" +
           "        /*0070*/                   CCTL.E.PF2 [R8] ;\n" +
           "        /*0080*/                   EXIT ;\n";
  };
  KernelReport r = audit(body("R0"));
  ASSERT_TRUE(one_finding(r, 'b'));
  EXPECT_TRUE(audit(body("R5")).findings.empty());
}
