// scan-fuzz: random-program differential testing of the compiler (docs/fuzzing.md).
//   scan-fuzz --seconds 90 --seed 1 --out DIR     generate, compile, run reference vs CPU vs CUDA, reduce failures
//   (every mode: --no-cuda skips the CUDA kernels, which run on the concurrent emulator)
//   scan-fuzz --print SEED                        print the program of a seed (and --mutant: its mutant)
//   scan-fuzz --file F.scan [--seed S]            check one file (a reproducer or a regression input)
//   scan-fuzz --self-test N --scanc PATH --out DIR   programs pass `scanc check`, mutants exit 1 located
//   scan-fuzz --regressions DIR|FILE              every DIR/*.scan (past failures), or FILE, passes at seeds 1..3
// Each check runs in a forked child so that a crash or a hang is recorded, not fatal.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "tests/fuzz/DiffCheck.h"
#include "tests/fuzz/ProgramGenerator.h"

namespace {

using namespace scanforge::fuzz;

// The emulator the CUDA kernels run on, libraries cached in the output directory (null: --no-cuda).
const scanforge::gpu::EmulatorOptions *cudaEmulator = nullptr;

struct Outcome {
  CheckResult::Status status;
  std::string category, detail;
};

// Runs `check` in a child process with a time limit; a signal or a timeout is a failure.
template <typename F>
Outcome isolated(F check, unsigned seconds = 180) {
  int fds[2];
  if (pipe(fds) != 0) return {CheckResult::Fail, "harness", "pipe failed"};
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    alarm(seconds);
    CheckResult r = check();
    std::string msg = r.category + "\n" + r.detail;
    for (size_t off = 0; off < msg.size();) {
      ssize_t n = write(fds[1], msg.data() + off, msg.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    _exit(r.status == CheckResult::Pass ? 0 : r.status == CheckResult::Skip ? 3 : 1);
  }
  close(fds[1]);
  std::string msg;
  char chunk[4096];
  for (ssize_t n; (n = read(fds[0], chunk, sizeof chunk)) > 0;) msg.append(chunk, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status))
    return {CheckResult::Fail, WTERMSIG(status) == SIGALRM ? "timeout" : "crash",
            std::string("killed by signal ") + strsignal(WTERMSIG(status))};
  size_t nl = msg.find('\n');
  std::string cat = msg.substr(0, nl), detail = nl == std::string::npos ? "" : msg.substr(nl + 1);
  int code = WEXITSTATUS(status);
  return {code == 0 ? CheckResult::Pass : code == 3 ? CheckResult::Skip : CheckResult::Fail, cat, detail};
}

// Greedy reduction: drop statements (with their output ports) and unused ports while the
// failure keeps its category.
Program reduce(Program p, const Outcome &failure, uint64_t seed) {
  auto persists = [&](const Program &q) {
    Outcome o = isolated([&] { return checkProgram("fz.scan", q.text(), seed, cudaEmulator); });
    return o.status == CheckResult::Fail && o.category == failure.category;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = p.body.size(); i-- > 0;) {
      Program q = p;
      std::string out = q.body[i].output;
      q.body.erase(q.body.begin() + static_cast<long>(i));
      if (!out.empty())
        for (size_t k = 0; k < q.outputs.size(); ++k)
          if (q.outputs[k].name == out) q.outputs.erase(q.outputs.begin() + static_cast<long>(k));
      if (q.outputs.empty()) continue;
      if (persists(q)) p = q, changed = true;
    }
    for (auto ports : {&Program::inputs, &Program::params})
      for (size_t i = (p.*ports).size(); i-- > 0;) {
        Program q = p;
        (q.*ports).erase((q.*ports).begin() + static_cast<long>(i));
        if (!q.inputs.empty() && persists(q)) p = q, changed = true;
      }
  }
  return p;
}

void writeFile(const std::filesystem::path &path, const std::string &text) {
  std::ofstream(path) << text;
}

int fuzz(uint64_t seed, long count, double seconds, const std::filesystem::path &out, bool doReduce) {
  std::filesystem::create_directories(out);
  auto start = std::chrono::steady_clock::now();
  std::map<std::string, long> counts;
  long generated = 0;
  for (uint64_t s = seed; count < 0 || generated < count; ++s) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (seconds > 0 && elapsed > seconds) break;
    Program p = generate(s);
    ++generated;
    std::string text = p.text();
    Outcome o = isolated([&] { return checkProgram("fz.scan", text, s, cudaEmulator); });
    Mutant m = mutate(p, s);
    Outcome mo = isolated([&] { return checkRejected("mutant.scan", m.program.text()); });
    counts[mo.status == CheckResult::Pass ? "mutants rejected" : "mutant failures"]++;
    if (mo.status != CheckResult::Pass) {
      std::filesystem::path f = out / ("mutant-" + std::to_string(s) + ".scan");
      writeFile(f, m.program.text());
      std::cout << "MUTANT FAILURE seed " << s << " (" << m.kind << ", " << mo.category << "): " << f.string() << "\n"
                << mo.detail << "\n";
    }
    if (o.status == CheckResult::Pass) { counts["passed"]++; continue; }
    if (o.status == CheckResult::Skip) { counts["skipped (reference not finite)"]++; continue; }
    counts["failures"]++;
    std::filesystem::path f = out / ("fail-" + std::to_string(s) + ".scan");
    writeFile(f, text);
    std::cout << "FAILURE seed " << s << " [" << o.category << "]\n" << text << o.detail << "\n";
    if (doReduce) {
      Program r = reduce(p, o, s);
      std::filesystem::path rf = out / ("fail-" + std::to_string(s) + ".reduced.scan");
      writeFile(rf, r.text());
      std::cout << "reduced:\n" << r.text();
      f = rf;
    }
    std::cout << "reproduce: scan-fuzz --file " << f.string() << " --seed " << s << "\n\n";
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "scan-fuzz: " << generated << " programs (seeds " << seed << ".." << seed + generated - 1 << ") in "
            << static_cast<long>(elapsed) << " s";
  for (auto &[k, v] : counts) std::cout << "; " << k << " " << v;
  std::cout << "\n";
  return counts["failures"] + counts["mutant failures"] ? 1 : 0;
}

// Runs `command`, returning its exit status and its combined output.
std::pair<int, std::string> shell(const std::string &command) {
  std::string out;
  FILE *f = popen((command + " 2>&1").c_str(), "r");
  if (!f) return {-1, ""};
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  int status = pclose(f);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

int selfTest(long n, const std::string &scanc, const std::filesystem::path &out) {
  std::filesystem::create_directories(out);
  std::map<std::string, long> kinds;
  int bad = 0;
  for (long s = 1; s <= n; ++s) {
    Program p = generate(static_cast<uint64_t>(s));
    if (generate(static_cast<uint64_t>(s)).text() != p.text()) {
      std::cout << "seed " << s << ": generation is not reproducible\n";
      ++bad;
    }
    std::filesystem::path f = out / ("gen-" + std::to_string(s) + ".scan");
    writeFile(f, p.text());
    auto [code, text] = shell(scanc + " check " + f.string());
    if (code != 0) {
      std::cout << "seed " << s << ": generated program fails `scanc check` (exit " << code << ")\n" << p.text() << text;
      ++bad;
    }
    Mutant m = mutate(p, static_cast<uint64_t>(s));
    kinds[m.kind]++;
    std::filesystem::path mf = out / ("mutant-" + std::to_string(s) + ".scan");
    writeFile(mf, m.program.text());
    auto [mcode, mtext] = shell(scanc + " check " + mf.string());
    if (mcode != 1 || mtext.find(mf.string() + ":") == std::string::npos || mtext.find(": error:") == std::string::npos) {
      std::cout << "seed " << s << ": mutant (" << m.kind << ") not rejected with a located error (exit " << mcode << ")\n"
                << m.program.text() << mtext;
      ++bad;
    }
  }
  std::cout << "self-test: " << n << " programs and mutants, " << bad << " problems; mutant kinds:";
  for (auto &[k, v] : kinds) std::cout << " " << k << "=" << v;
  std::cout << "\n";
  return bad ? 1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
  uint64_t seed = 1;
  long count = -1, selfN = 0;
  double seconds = 0;
  std::string out = "fuzz-out", file, scanc, print, regressions;
  bool doReduce = true, mutant = false, withCuda = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::cerr << a << " needs a value\n"; std::exit(2); }
      return argv[++i];
    };
    if (a == "--seed") seed = std::stoull(next());
    else if (a == "--count") count = std::stol(next());
    else if (a == "--seconds") seconds = std::stod(next());
    else if (a == "--out") out = next();
    else if (a == "--file") file = next();
    else if (a == "--print") print = next();
    else if (a == "--mutant") mutant = true;
    else if (a == "--no-reduce") doReduce = false;
    else if (a == "--no-cuda") withCuda = false;
    else if (a == "--self-test") selfN = std::stol(next());
    else if (a == "--scanc") scanc = next();
    else if (a == "--regressions") regressions = next();
    else { std::cerr << "unknown option " << a << " (see the comment at the top of scan_fuzz.cpp)\n"; return 2; }
  }
  if (!print.empty()) {
    Program p = generate(std::stoull(print));
    std::cout << (mutant ? mutate(p, std::stoull(print)).program.text() : p.text());
    return 0;
  }
  if (selfN) return selfTest(selfN, scanc, out);
  scanforge::gpu::EmulatorOptions emulator;
  emulator.cacheDir = std::filesystem::absolute(out.empty() ? "fuzz-out" : out) / "emulation-cache";
  if (withCuda) cudaEmulator = &emulator;
  if (!regressions.empty()) {
    int failed = 0, files = 0;
    std::vector<std::filesystem::path> paths;
    if (std::filesystem::is_directory(regressions))
      for (const auto &entry : std::filesystem::directory_iterator(regressions)) paths.push_back(entry.path());
    else
      paths.push_back(regressions);
    for (const std::filesystem::path &path : paths) {
      if (path.extension() != ".scan") continue;
      ++files;
      std::ifstream in(path);
      std::stringstream text;
      text << in.rdbuf();
      for (uint64_t s = 1; s <= 3; ++s) {
        Outcome o = isolated([&] { return checkProgram(path.filename().string(), text.str(), s, cudaEmulator); });
        if (o.status != CheckResult::Fail) continue;
        std::cout << path.string() << " seed " << s << ": FAIL [" << o.category << "]\n" << o.detail << "\n";
        ++failed;
      }
    }
    std::cout << "regressions: " << files << " files, " << failed << " failing runs\n";
    return failed || !files ? 1 : 0;
  }
  if (!file.empty()) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    Outcome o = isolated([&] { return checkProgram(std::filesystem::path(file).filename().string(), text.str(), seed, cudaEmulator); });
    std::cout << file << ": " << (o.status == CheckResult::Pass ? "pass" : o.status == CheckResult::Skip ? "skip" : "FAIL [" + o.category + "]")
              << "\n" << (o.status == CheckResult::Pass ? "" : o.detail + "\n");
    return o.status == CheckResult::Fail ? 1 : 0;
  }
  if (count < 0 && seconds <= 0) count = 100;
  return fuzz(seed, count, seconds, out, doReduce);
}
