// Every recurrence in models/ parses and checks, and the checked structure is what the design says.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "dsl/Printer.h"
#include "tests/dsl/DslTestUtil.h"

namespace scanforge::dsl::test {
namespace {

std::string readModel(const std::string &name) {
  std::ifstream in(std::string(SCANFORGE_SOURCE_DIR) + "/models/" + name);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

std::vector<std::string> modelFiles() {
  std::vector<std::string> names;
  for (auto &entry : std::filesystem::directory_iterator(std::string(SCANFORGE_SOURCE_DIR) + "/models"))
    if (entry.path().extension() == ".scan") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(Models, AllSevenArePresent) {
  EXPECT_EQ(modelFiles(), (std::vector<std::string>{"glu_rnn.scan", "linear_attention.scan", "lru.scan",
                                                    "mingated.scan", "mingru.scan", "minlstm.scan",
                                                    "selective_ssm.scan"}));
}

TEST(Models, EveryModelChecksWithoutDiagnostics) {
  for (const std::string &name : modelFiles()) {
    CheckResult r = checkSource(readModel(name), name);
    EXPECT_TRUE(r.ok) << r.rendered;
    EXPECT_TRUE(r.warnings.empty()) << r.rendered;
  }
}

// Printing the checked AST and parsing it again gives the same text: the dump is re-parsable.
TEST(Models, AstDumpRoundTrips) {
  for (const std::string &name : modelFiles()) {
    CheckResult first = checkSource(readModel(name), name);
    std::ostringstream once;
    printModule(once, first.module, /*annotate=*/true);
    CheckResult second = checkSource(once.str(), name);
    ASSERT_TRUE(second.ok) << once.str() << second.rendered;
    std::ostringstream twice;
    printModule(twice, second.module, /*annotate=*/true);
    EXPECT_EQ(once.str(), twice.str());
  }
}

TEST(Models, SelectiveSsmHasAnExpandedStateAndAContraction) {
  CheckResult r = checkSource(readModel("selective_ssm.scan"));
  ASSERT_TRUE(r.ok) << r.rendered;
  const Recurrence &rec = r.module.recurrences.at(0);
  EXPECT_EQ(rec.checked.dims, (std::vector<std::string>{"d", "n"}));
  ASSERT_EQ(rec.checked.states.size(), 1u);
  EXPECT_EQ(rec.checked.states[0].name, "s");
  EXPECT_EQ(formatDims(rec, rec.checked.states[0].dims), "[d, n]");
  EXPECT_EQ(rec.checked.states[0].output, -1);
  EXPECT_EQ(rec.body[2].kind, Stmt::Kind::Output);
  EXPECT_EQ(rec.params.size(), 2u);
}

TEST(Models, MinGruStateIsItsOutput) {
  CheckResult r = checkSource(readModel("mingru.scan"));
  ASSERT_TRUE(r.ok) << r.rendered;
  const Recurrence &rec = r.module.recurrences.at(0);
  ASSERT_EQ(rec.checked.states.size(), 1u);
  EXPECT_EQ(rec.checked.states[0].output, 0);
  EXPECT_EQ(rec.body[0].kind, Stmt::Kind::Local);
  EXPECT_EQ(rec.body[1].kind, Stmt::Kind::State);
}

TEST(Models, LinearAttentionStateDimsFollowTheDeclaration) {
  CheckResult r = checkSource(readModel("linear_attention.scan"));
  ASSERT_TRUE(r.ok) << r.rendered;
  const Recurrence &rec = r.module.recurrences.at(0);
  EXPECT_EQ(formatDims(rec, rec.checked.states[0].dims), "[e, k]");
}

}  // namespace
}  // namespace scanforge::dsl::test
