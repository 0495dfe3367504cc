// The CUDA emitter's decisions, read from its manifest: thread layouts, the buffers a backward
// reads from its forward, what is zeroed before accumulation, and located errors for IR the
// backend cannot compile.
#include "mlir/Parser/Parser.h"
#include "tests/cuda/CudaTestUtil.h"

namespace scanforge::test {
namespace {

const nlohmann::json &recurrence(const nlohmann::json &manifest, const std::string &name) {
  for (const nlohmann::json &r : manifest["recurrences"])
    if (r["name"] == name) return r;
  throw std::runtime_error("no recurrence " + name);
}
const nlohmann::json &buffer(const nlohmann::json &rec, const std::string &name) {
  for (const nlohmann::json &b : rec["buffers"])
    if (b["name"] == name) return b;
  throw std::runtime_error("no buffer " + name);
}

nlohmann::json manifestOfModel(const std::string &model, bool bf16 = false) {
  std::string source = readModel(model);
  auto compiled = compileReference(bf16 ? bf16Variant(source) : source, model + ".scan");
  if (!compiled) throw std::runtime_error("cannot compile " + model);
  return manifestOf(*compiled->module);
}

TEST(CudaEmitter, ContractedDimensionsLiveInRegisters) {
  nlohmann::json ssm = manifestOfModel("selective_ssm");
  EXPECT_EQ(recurrence(ssm, "selective_ssm")["layout"]["channel_dims"], nlohmann::json({"d"}));
  EXPECT_EQ(recurrence(ssm, "selective_ssm")["layout"]["register_dims"], nlohmann::json({"n"}));
  // n is also the lane dimension: dealt to $LANES threads per channel, a macro the plan sets.
  EXPECT_EQ(recurrence(ssm, "selective_ssm")["defines"], nlohmann::json({{"SF_DIM_n", "n"}, {"SF_LANES", "$LANES"}, {"SF_STASH", "$STASH"}}));
  EXPECT_EQ(recurrence(ssm, "selective_ssm")["layout"]["lane_dim"], "n");
  nlohmann::json attention = manifestOfModel("linear_attention");
  EXPECT_EQ(recurrence(attention, "linear_attention")["layout"]["channel_dims"], nlohmann::json({"e"}));
  EXPECT_EQ(recurrence(attention, "linear_attention")["layout"]["register_dims"], nlohmann::json({"k"}));
  nlohmann::json mingru = manifestOfModel("mingru");
  EXPECT_EQ(recurrence(mingru, "mingru")["layout"]["register_dims"], nlohmann::json::array());
  EXPECT_EQ(recurrence(mingru, "mingru")["channels"], "d");
  EXPECT_FALSE(recurrence(mingru, "mingru")["layout"].contains("lane_dim"));
  EXPECT_EQ(recurrence(mingru, "mingru")["strategies"]["sequential"][0]["grid"][0], "cdiv(d, 256)");
  // Threads per batch element: channels times lanes.
  EXPECT_EQ(recurrence(ssm, "selective_ssm")["strategies"]["sequential"][0]["grid"][0], "cdiv((d)*$LANES, 64)");
}

// minGRU's h is also its output: the sequential backward recomputes it from checkpoints with the
// chunk's inputs stashed (reading them once), the chunked one reads it back from the output.
TEST(CudaEmitter, SequentialBackwardRecomputesAnOutputStateChunkedReadsIt) {
  nlohmann::json m = manifestOfModel("mingru");
  const nlohmann::json &bwd = recurrence(m, "mingru.backward");
  EXPECT_EQ(recurrence(m, "mingru")["backward"], "mingru.backward");
  EXPECT_EQ(bwd["adjoint_of"], "mingru");
  EXPECT_EQ(buffer(bwd, "h")["role"], "forward_output");
  EXPECT_EQ(buffer(bwd, "h.initial")["role"], "forward_initial_state");
  EXPECT_EQ(buffer(bwd, "h.checkpoints")["role"], "checkpoint");
  EXPECT_TRUE(buffer(recurrence(m, "mingru"), "h.checkpoints")["for_backward"].get<bool>());
  // One float of recomputed h per thread and step, and the stash of the gates the recompute walk
  // computes for the steps (sigmoid(k), g(u), g'(u), sigmoid(k) sigmoid(-k)): 256 threads * 4 bytes.
  EXPECT_EQ(bwd["strategies"]["sequential"][0]["shared_bytes"], "(1024*(1)+4096*$STASH)*$L");
  EXPECT_EQ(bwd["strategies"]["chunked"][0]["shared_bytes"], "(2048*$STASH)*$L");  // k and h.grad
  EXPECT_FALSE(bwd.contains("recompute_bytes_per_step"));  // the launches say it
}

// The sequential backward's recompute walk stashes the steps' gates only where that spares the
// steps a transcendental function: minLSTM's six (its quotient gate and complement, g(u), g'(u),
// sigmoid(-f), sigmoid(-i)) instead of f, i and u; the GLU RNN's steps evaluate none, so it
// keeps its inputs' stash.
TEST(CudaEmitter, TheRecomputeWalkStashesGatesWhereTheySpareTranscendentals) {
  EXPECT_EQ(recurrence(manifestOfModel("minlstm"), "minlstm.backward")["strategies"]["sequential"][0]["shared_bytes"],
            "(1024*(1)+6144*$STASH)*$L");
  EXPECT_EQ(recurrence(manifestOfModel("glu_rnn"), "glu_rnn.backward")["strategies"]["sequential"][0]["shared_bytes"],
            "(1024*(1)+2048*$STASH)*$L");
  // The register arrays of the selective SSM leave no room for a stash in the sequential kernel.
  EXPECT_EQ(recurrence(manifestOfModel("selective_ssm"), "selective_ssm.backward")["strategies"]["sequential"][0]["shared_bytes"],
            "256*(n/$LANES)*$L");
}

TEST(CudaEmitter, BackwardRecomputesAnExpandedStateFromCheckpoints) {
  nlohmann::json m = manifestOfModel("selective_ssm");
  const nlohmann::json &bwd = recurrence(m, "selective_ssm.backward");
  EXPECT_EQ(buffer(bwd, "s.checkpoints")["role"], "checkpoint");
  EXPECT_EQ(buffer(bwd, "s.checkpoints")["shape"], nlohmann::json({"$B", "$NC", "n", "d"}));
  EXPECT_TRUE(buffer(recurrence(m, "selective_ssm"), "s.checkpoints")["for_backward"].get<bool>());
  // Tiles of 128 threads: 4 bytes per thread and float of recomputed state or stash.
  EXPECT_EQ(bwd["strategies"]["chunked"][0]["shared_bytes"], "(512*(n/$LANES)+1536*$STASH)*$L");
  // Per thread across steps: the adjoint s.adj and the recomputed s, each n / $LANES floats.
  EXPECT_EQ(bwd["state_registers"], "n/$LANES+n/$LANES");
  EXPECT_EQ(recurrence(m, "selective_ssm")["state_registers"], "n/$LANES");  // 64 threads * 4 bytes * a lane's floats of n
  // The state-sized ops once per element of n a lane holds; two sums over n (x.grad's and dt.grad's
  // share one, --scan-factor-sums), each a butterfly; delta * x once per channel, not per element
  // of n (--scan-order-products).
  EXPECT_EQ(bwd["step_instructions"], "142+2*(2*log2($LANES))+98*(n/$LANES)");
  EXPECT_EQ(bwd["chain_group"], 4);                        // register dimensions: short carry groups
  EXPECT_EQ(bwd["strategies"]["sequential"][0]["kernel"], "sf_selective_ssm_backward_seq");
  EXPECT_EQ(bwd["strategies"]["sequential"][0]["shared_bytes"], "256*(n/$LANES)*$L");  // no stash beside arrays
  // Gradients of B and C sum over the channels: each warp stores its sums in its own row (none
  // with atomic sums), a kernel adds the rows. Zeroed: what is added into atomically (B.grad and
  // C.grad with atomic sums, the parameter gradients: batch slices add to them in turn) and the
  // chunked kernel's chain.
  EXPECT_EQ(buffer(bwd, "B.grad.by_warp")["shape"], nlohmann::json({"(1-$ATOMIC)*cdiv((d)*$LANES, 32)", "$B", "$T", "n"}));
  EXPECT_EQ(bwd["defines"]["SF_ATOMIC_SUMS"], "$ATOMIC");
  EXPECT_EQ(bwd["zero_init"], nlohmann::json({"B.grad", "C.grad", "A.grad", "D.grad", "sf.chain"}));
}

TEST(CudaEmitter, SumsOverChannelsAreAddedFromWarpRowsInAFixedOrder) {
  nlohmann::json m = manifestOfModel("selective_ssm", /*bf16=*/true);
  const nlohmann::json &bwd = recurrence(m, "selective_ssm.backward");
  EXPECT_EQ(buffer(bwd, "B.grad")["dtype"], "bf16");
  EXPECT_EQ(buffer(bwd, "B.grad.by_warp")["role"], "workspace");
  EXPECT_EQ(buffer(bwd, "B.grad.by_warp")["dtype"], "f32");
  EXPECT_EQ(buffer(bwd, "B.grad.f32")["role"], "workspace");  // what atomic sums add into, then converted
  EXPECT_EQ(bwd["zero_init"], nlohmann::json({"B.grad.f32", "C.grad.f32", "A.grad", "D.grad", "sf.chain"}));
  const nlohmann::json &seq = bwd["strategies"]["sequential"];
  // The scan, the sums of A.grad's and D.grad's partial sums, B.grad's and C.grad's warp rows
  // added and stored as bf16 (an empty grid with atomic sums), then, with atomic sums only, their
  // f32 sums converted.
  ASSERT_EQ(seq.size(), 7u);
  EXPECT_EQ(seq[1]["kernel"], "sf_selective_ssm_backward_sum_A_grad");
  EXPECT_EQ(seq[1]["params"],
            nlohmann::json::parse(R"([{"buffer": "A.grad.by_sequence"}, {"buffer": "A.grad"}, {"i32": "$B"}, {"i32": "d"}])"));
  EXPECT_EQ(bwd["strategies"]["chunked"][1]["params"][2], nlohmann::json::parse(R"({"i32": "$B*$NC"})"));
  EXPECT_EQ(buffer(bwd, "A.grad.by_chunk")["shape"], nlohmann::json({"$B", "$NC", "d", "n"}));
  EXPECT_EQ(seq[3]["kernel"], "sf_selective_ssm_backward_sum_B_grad");
  const char *sumParams = R"j([{"buffer": "B.grad.by_warp"}, {"buffer": "B.grad"}, {"i64": "$B*$T*n"}, {"i32": "cdiv((d)*$LANES, 32)"}])j";
  EXPECT_EQ(seq[3]["params"], nlohmann::json::parse(sumParams));
  EXPECT_EQ(seq[3]["grid"][0], "(1-$ATOMIC)*cdiv($B*$T*n, 256)");
  EXPECT_EQ(seq[4]["kernel"], "sf_selective_ssm_backward_sum_C_grad");
  EXPECT_EQ(seq[5]["kernel"], "sf_selective_ssm_backward_to_bf16");
  EXPECT_EQ(seq[5]["params"], nlohmann::json::parse(R"([{"buffer": "B.grad.f32"}, {"buffer": "B.grad"}, {"i64": "$B*$T*n"}])"));
  EXPECT_EQ(seq[5]["grid"][0], "$ATOMIC*cdiv($B*$T*n, 256)");
}

TEST(CudaEmitter, ChunkedStrategyIsOneLaunchWithAChainOfTiles) {
  nlohmann::json m = manifestOfModel("lru");
  const nlohmann::json &fwd = recurrence(m, "lru");
  std::vector<std::string> kernels;
  for (const nlohmann::json &l : fwd["strategies"]["chunked"]) kernels.push_back(l["kernel"]);
  EXPECT_EQ(kernels, (std::vector<std::string>{"sf_lru_chunk"}));
  EXPECT_EQ(fwd["strategies"]["chunked"][0]["grid"], nlohmann::json({"cdiv(d, 256)", "$B", "$NC"}));
  // A ticket counter and one flag per tile, zeroed before every launch.
  EXPECT_EQ(buffer(fwd, "sf.chain")["dtype"], "i32");
  EXPECT_EQ(buffer(fwd, "sf.chain")["shape"], nlohmann::json({"1+cdiv(d, 256)*$B*$NC"}));
  const nlohmann::json &zeroed = fwd["zero_init"];
  EXPECT_NE(std::find(zeroed.begin(), zeroed.end(), "sf.chain"), zeroed.end());
  EXPECT_EQ(fwd["strategies"]["sequential"][0]["grid"], nlohmann::json({"cdiv(d, 256)", "$B", "1"}));
  EXPECT_EQ(fwd["chain_group"], 16);  // the group the kernel composes its carry over, for the planner
}

TEST(CudaEmitter, FallsBackToOneThreadPerBatchElementWithAReason) {
  auto compiled = compileReference(edgeRecurrences()[2].source, "shared_state.scan");
  ASSERT_TRUE(compiled);
  nlohmann::json m = manifestOf(*compiled->module);
  const nlohmann::json &layout = recurrence(m, "shared_state")["layout"];
  EXPECT_EQ(layout["channel_dims"], nlohmann::json::array());
  EXPECT_EQ(layout["register_dims"], nlohmann::json({"d", "n"}));
  // The adjoint of c adds a sum over d (through o = sum(n: c) * x) to c's own adjoint.
  EXPECT_EQ(layout["note"], "one worker per batch element, because 'arith.addf' at shared_state.scan:3:3 needs the "
                            "complete sum of an operand over the channel dimensions");
}

// Parses textual IR and runs the emitter on it; returns the diagnostics.
std::string emitErrors(const std::string &ir) {
  scan::Session session;
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(&session.context(), [&](mlir::Diagnostic &d) {
    llvm::raw_string_ostream os(diagnostics);
    os << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::parseSourceString<mlir::ModuleOp>(ir, &session.context());
  if (!module) return "the IR does not parse: " + diagnostics;
  mlir::ModuleAnalysisManager analyses(*module, /*passInstrumentor=*/nullptr);
  EXPECT_TRUE(mlir::failed(cuda::emitCuda(*module, analyses)));
  return diagnostics;
}

TEST(CudaEmitter, UnknownOpIsALocatedError) {
  std::string errors = emitErrors(R"(
scan.recurrence @f dims ["d"] {
  %0 = scan.input "x" ["d"] : f32
  %1 = math.sin %0 : f32 loc("f.scan":3:7)
  %2 = scan.update "h" ["d"] a(%1) b(%0) : f32
  scan.output "h" ["d"] %2 : f32
})");
  EXPECT_EQ(errors, "loc(\"f.scan\":3:7): the CUDA backend does not know 'math.sin'\n");
}

TEST(CudaEmitter, StatesMustBeInAffineForm) {
  std::string errors = emitErrors(R"(
scan.recurrence @f dims ["d"] {
  %0 = scan.input "x" ["d"] : f32
  %1 = scan.prev "h" ["d"] : f32
  %2 = arith.mulf %0, %1 : f32
  %3 = scan.next "h" ["d"] %2 : f32 loc("f.scan":5:3)
  scan.output "h" ["d"] %3 : f32
})");
  EXPECT_EQ(errors, "loc(\"f.scan\":5:3): state 'h' is not in affine form; the CUDA backend compiles recurrences "
                    "after --scan-compile (or --scan-extract-affine)\n");
}

TEST(CudaEmitter, KernelNamesMustNotCollide) {
  auto compiled = compileReference(readModel("mingru") + R"(
recurrence mingru_backward(k[d], u[d]) -> h[d] {
  h = 0.5 * h + k * u
}
)", "clash.scan");
  ASSERT_TRUE(compiled);
  std::string errors;
  llvm::raw_string_ostream os(errors);
  EXPECT_TRUE(mlir::failed(cuda::packageManifest(kernelsOf(*compiled->module), os)));
  EXPECT_NE(errors.find("'mingru.backward' and 'mingru_backward' would share the kernel file 'mingru_backward.cu'"),
            std::string::npos)
      << errors;
}

}  // namespace
}  // namespace scanforge::test
