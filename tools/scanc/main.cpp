// scanc: the scanforge compiler driver. Checks .scan files and prints every stage of compilation.
// Exit codes: 0 success, 1 a problem in the user's input, 2 an internal error (a bug in scanforge).
#include <CLI/CLI.hpp>

#include <iostream>
#include <sstream>

#include "dsl/Parser.h"
#include "dsl/Printer.h"
#include "dsl/Sema.h"

namespace {

using namespace scanforge;

constexpr int kOk = 0;
constexpr int kUserError = 1;
constexpr int kInternalError = 2;

const char *kExamples = R"(Examples:
  scanc check models/*.scan              check files; print diagnostics
  scanc --dump=ast models/mingru.scan    print the checked syntax tree (re-parsable .scan text)
)";

// Loads, parses and checks one file; prints diagnostics to stderr. Returns false on any error.
bool loadAndCheck(const std::string &path, std::optional<dsl::SourceFile> &file, dsl::Module &module) {
  std::string error;
  file = dsl::SourceFile::load(path, error);
  if (!file) {
    std::cerr << "scanc: error: " << error << "\n";
    return false;
  }
  dsl::DiagnosticEngine diags(*file);
  bool ok = dsl::parseAndCheck(*file, diags, module);
  diags.render(std::cerr);
  return ok;
}

std::string summary(const dsl::Recurrence &rec) {
  std::ostringstream os;
  os << rec.name.name << ": " << (rec.reverse ? "reverse" : "forward") << " scan over t; ";
  auto ports = [&](const char *label, const std::vector<dsl::Port> &list) {
    os << list.size() << " " << label << (list.size() == 1 ? "" : "s");
    if (!list.empty()) {
      os << " (";
      for (size_t i = 0; i < list.size(); ++i)
        os << (i ? " " : "") << list[i].name.name << dsl::formatDims(rec, list[i].dimIds);
      os << ")";
    }
  };
  ports("input", rec.inputs);
  os << ", ";
  ports("parameter", rec.params);
  os << ", " << rec.checked.states.size() << " state" << (rec.checked.states.size() == 1 ? "" : "s") << " (";
  for (size_t i = 0; i < rec.checked.states.size(); ++i)
    os << (i ? " " : "") << rec.checked.states[i].name << dsl::formatDims(rec, rec.checked.states[i].dims);
  os << "), ";
  ports("output", rec.outputs);
  os << "; linear in every state";
  return os.str();
}

int runCheck(const std::vector<std::string> &files) {
  int status = kOk;
  for (const std::string &path : files) {
    std::optional<dsl::SourceFile> file;
    dsl::Module module;
    if (!loadAndCheck(path, file, module)) {
      status = kUserError;
      continue;
    }
    for (const dsl::Recurrence &rec : module.recurrences) std::cout << path << ": " << summary(rec) << "\n";
  }
  return status;
}

std::vector<std::string> splitList(const std::string &list) {
  std::vector<std::string> items;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) items.push_back(item);
  return items;
}

int runDump(const std::vector<std::string> &stages, const std::vector<std::string> &files) {
  for (const std::string &stage : stages)
    if (stage != "ast") {
      std::cerr << "scanc: error: unknown stage '" << stage << "' in --dump\n"
                << "hint: stages are: ast\n";
      return kUserError;
    }
  int status = kOk;
  for (const std::string &path : files) {
    std::optional<dsl::SourceFile> file;
    dsl::Module module;
    if (!loadAndCheck(path, file, module)) {
      status = kUserError;
      continue;
    }
    std::cout << "# ----- " << path << ": checked AST -----\n";
    dsl::printModule(std::cout, module, /*annotate=*/true);
    for (const dsl::Recurrence &rec : module.recurrences) std::cout << "# " << summary(rec) << "\n";
  }
  return status;
}

int run(int argc, char **argv) {
  CLI::App app{"scanc: compile linear recurrences written in the scanforge DSL", "scanc"};
  app.footer(kExamples);
  app.require_subcommand(0, 1);

  std::string dumpList;
  std::vector<std::string> files;
  app.add_option("--dump", dumpList, "print these stages of FILE (comma-separated): ast");
  app.add_option("files", files, "the .scan files")->check(CLI::ExistingFile);

  auto *check = app.add_subcommand("check", "check .scan files and print diagnostics");
  std::vector<std::string> checkFiles;
  check->add_option("files", checkFiles, "the .scan files")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    int code = app.exit(e);
    return code == 0 ? kOk : kUserError;
  }
  if (*check) return runCheck(checkFiles);
  if (files.empty()) {
    std::cerr << "scanc: error: no input files\n" << app.help();
    return kUserError;
  }
  if (!dumpList.empty()) return runDump(splitList(dumpList), files);
  return runCheck(files);
}

}  // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception &e) {
    std::cerr << "scanc: internal error: " << e.what() << "\nplease report this as a bug in scanforge\n";
    return kInternalError;
  }
}
