#include "tools/gpu/emulator/KernelLibrary.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <sstream>

#include "runtime/cuda/CudaError.h"
#include "runtime/cuda/Sha256.h"

namespace scanforge::gpu {

namespace {

using cuda::CudaError;

std::string run(const std::string &command, int &status) {
  std::string output;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) {
    status = -1;
    return "cannot run: " + command;
  }
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) output.append(buf, n);
  status = pclose(pipe);
  return output;
}

// "fwd1<16>" -> "fwd1_16_": a C symbol for a kernel name that may be a template instance.
std::string symbolOf(const std::string &kernel) {
  std::string s = "sf_emu_entry_";
  for (char c : kernel) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s;
}

int findSegments(dl_phdr_info *info, size_t, void *data) {
  auto *lib = static_cast<std::pair<uintptr_t, std::vector<std::pair<uintptr_t, uintptr_t>> *> *>(data);
  if (info->dlpi_addr != lib->first) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &h = info->dlpi_phdr[i];
    if (h.p_type == PT_LOAD) lib->second->push_back({info->dlpi_addr + h.p_vaddr, info->dlpi_addr + h.p_vaddr + h.p_memsz});
  }
  return 1;
}

}  // namespace

namespace {

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Splits `[extern] __shared__ [__align__(N)] TYPE NAME[EXTENTS]; [// comment]`, or returns false.
bool splitSharedDeclaration(const std::string &line, bool &isExtern, std::string &type, std::string &name,
                            std::string &extents) {
  std::string rest = trim(line.substr(0, line.find("//")));
  isExtern = rest.rfind("extern", 0) == 0;
  if (isExtern) rest = trim(rest.substr(6));
  if (rest.rfind("__shared__", 0) != 0 || rest.empty() || rest.back() != ';') return false;
  rest = trim(rest.substr(10, rest.size() - 11));
  if (rest.rfind("__align__(", 0) == 0) rest = trim(rest.substr(rest.find(')') + 1));
  size_t nameEnd = rest.size();
  while (nameEnd > 0 && rest[nameEnd - 1] == ']') {
    size_t open = rest.rfind('[', nameEnd - 1);
    if (open == std::string::npos) return false;
    nameEnd = rest.find_last_not_of(" \t", open - 1) + 1;
  }
  extents = rest.substr(nameEnd);
  extents.erase(std::remove(extents.begin(), extents.end(), ' '), extents.end());
  size_t nameBegin = nameEnd;
  while (nameBegin > 0 && (std::isalnum(static_cast<unsigned char>(rest[nameBegin - 1])) || rest[nameBegin - 1] == '_'))
    --nameBegin;
  name = rest.substr(nameBegin, nameEnd - nameBegin);
  type = trim(rest.substr(0, nameBegin));
  return !name.empty() && !type.empty();
}

}  // namespace

std::string rewriteSharedDeclarations(const std::string &source, const std::string &file) {
  std::istringstream in(source);
  std::ostringstream out;
  std::string line, type, name, extents;
  bool isExtern = false;
  unsigned id = 0;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find("__shared__") == std::string::npos || !splitSharedDeclaration(line, isExtern, type, name, extents)) {
      out << line << "\n";
      continue;
    }
    if (isExtern) {
      if (extents != "[]")
        throw CudaError(file + ":" + std::to_string(number) + ": the emulator takes `extern __shared__ T name[];` only");
      out << "#define " << name << " (static_cast<" << type << " *>(sf_emu_dynamic_shared()))\n";
    } else {
      std::string object = type + extents;  // e.g. float[128]
      out << "#define " << name << " (*static_cast<" << type << " (*)" << extents << ">(sf_emu_static_shared(" << id++
          << ", sizeof(" << object << "), alignof(" << object << "))))\n";
    }
  }
  return out.str();
}

std::unique_ptr<KernelLibrary> KernelLibrary::build(const cuda::ModuleSource &module, const BuildOptions &options) {
  std::string text = "#include \"CudaEmulation.h\"\n#line 1 \"" + module.name + "\"\n" +
                     rewriteSharedDeclarations(module.source, module.name) + "\n#line 1 \"<emulator entry points>\"\n";
  for (auto &[kernel, arity] : module.kernels) {
    text += "extern \"C\" SF_EMU_UNINSTRUMENTED void " + symbolOf(kernel) + "(void **a) {\n  " + kernel + "(";
    for (size_t i = 0; i < arity; ++i) text += (i ? ", " : "") + std::string("SfEmuArg{a[") + std::to_string(i) + "]}";
    text += ");\n}\n";
  }
  std::string flags = " -std=c++20 -O1 -g1 -fPIC -w " + options.flags;
  std::string compile = options.compiler + flags + " -fsanitize=thread --param=tsan-distinguish-volatile=1 -I" +
                        SCANFORGE_EMULATOR_KERNEL_INCLUDE;
  for (const std::string &o : module.options) compile += " " + o;
  std::string link = options.compiler + flags + " -shared";
  std::string headers;  // part of the key: a changed emulator rebuilds every library
  for (const char *h : {"CudaEmulation.h", "EmulationAbi.h"}) {
    std::ifstream in(std::filesystem::path(SCANFORGE_EMULATOR_KERNEL_INCLUDE) / h);
    headers += std::string(std::istreambuf_iterator<char>(in), {});
  }
  std::string key = cuda::hex(cuda::sha256(compile + "\n" + link + "\n" + headers + text)).substr(0, 32);
  std::filesystem::path library = options.cacheDir / (key + ".so");
  if (!std::filesystem::exists(library)) {
    std::filesystem::create_directories(options.cacheDir);
    // Written under names of this process's own and renamed into place (atomic): parallel test
    // processes, which share the cache, may build the same library at the same time. The source keeps
    // its name, which the compiler cache hashes.
    std::filesystem::path source = options.cacheDir / (key + ".cpp");
    std::string temp = library.string() + ".tmp." + std::to_string(::getpid());
    std::ofstream(temp + ".cpp") << text;
    std::filesystem::rename(temp + ".cpp", source);
    int status = 0;
    std::string launch = options.launcher.empty() ? "" : options.launcher + " ";
    std::string output = run(launch + compile + " -c " + source.string() + " -o " + temp + ".o", status);
    if (status == 0) output += run(link + " " + temp + ".o -o " + temp, status);
    std::filesystem::remove(temp + ".o");
    if (status != 0) throw CudaError("the host compiler rejected the emulated " + module.name + ":\n" + output);
    std::filesystem::rename(temp, library);
  }
  std::unique_ptr<KernelLibrary> lib(new KernelLibrary);
  lib->name_ = module.name;
  lib->path_ = library;
  lib->handle_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) throw CudaError("cannot load the emulated " + module.name + ": " + dlerror());
  lib->hooksSlot_ = static_cast<SfEmuHooks **>(dlsym(lib->handle_, "sf_emu_hooks"));
  lib->threadSlot_ = static_cast<const SfEmuThread **>(dlsym(lib->handle_, "sf_emu_thread"));
  if (!lib->hooksSlot_ || !lib->threadSlot_) throw CudaError("the emulated " + module.name + " lacks the emulator's slots");
  Dl_info info{};
  if (!dladdr(lib->hooksSlot_, &info)) throw CudaError("cannot locate the emulated " + module.name);
  lib->base_ = reinterpret_cast<uintptr_t>(info.dli_fbase);
  std::pair<uintptr_t, std::vector<std::pair<uintptr_t, uintptr_t>> *> search{lib->base_, &lib->segments_};
  dl_iterate_phdr(&findSegments, &search);
  for (auto &[kernel, arity] : module.kernels) {
    void *symbol = dlsym(lib->handle_, symbolOf(kernel).c_str());
    if (!symbol) throw CudaError("the emulated " + module.name + " lacks kernel " + kernel);
    lib->entries_[kernel] = reinterpret_cast<Entry>(symbol);
  }
  return lib;
}

KernelLibrary::~KernelLibrary() {
  if (handle_) dlclose(handle_);
}

KernelLibrary::Entry KernelLibrary::entry(const std::string &kernel) const {
  auto it = entries_.find(kernel);
  if (it == entries_.end()) throw CudaError("the emulated " + name_ + " has no kernel '" + kernel + "'");
  return it->second;
}

bool KernelLibrary::holds(const void *address) const {
  auto a = reinterpret_cast<uintptr_t>(address);
  for (auto [lo, hi] : segments_)
    if (a >= lo && a < hi) return true;
  return false;
}

uint32_t KernelLibrary::offsetOf(const void *pc) const {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pc) - base_ - 1);  // inside the call
}

std::string KernelLibrary::site(uint32_t offset) const { return sites({offset}).at(offset); }

// The outermost frame of the module's own file (kernel code inlines its helpers).
std::map<uint32_t, std::string> KernelLibrary::sites(const std::vector<uint32_t> &offsets) const {
  std::string command = "addr2line -i -a -e " + path_.string();
  std::vector<uint32_t> missing;
  for (uint32_t o : offsets)
    if (!siteCache_.count(o)) {
      missing.push_back(o);
      std::ostringstream hex;
      hex << " 0x" << std::hex << o;
      command += hex.str();
    }
  if (!missing.empty()) {
    int status = 0;
    std::istringstream out(run(command, status));
    std::string line, best;
    size_t index = 0;
    auto flush = [&] {
      if (index > 0 && index <= missing.size()) siteCache_[missing[index - 1]] = best.empty() ? name_ + ":?" : best;
    };
    while (std::getline(out, line)) {
      if (line.rfind("0x", 0) == 0) {
        flush();
        ++index;
        best.clear();
        continue;
      }
      std::string location = line.substr(0, line.find(' '));
      std::string file = location.substr(0, location.rfind(':'));
      file = file.substr(file.rfind('/') + 1);
      if (file == name_) best = file + location.substr(location.rfind(':'));
    }
    flush();
    for (uint32_t o : missing)
      if (!siteCache_.count(o)) siteCache_[o] = name_ + ":?";
  }
  std::map<uint32_t, std::string> result;
  for (uint32_t o : offsets) result[o] = siteCache_.at(o);
  return result;
}

}  // namespace scanforge::gpu
