#include "runtime/cuda/PackageFormat.h"

#include <algorithm>

#include "runtime/cuda/CudaError.h"

namespace scanforge::cuda {

namespace {

constexpr std::pair<BufferRole, const char *> kRoles[] = {
    {BufferRole::Input, "input"},
    {BufferRole::Param, "param"},
    {BufferRole::Output, "output"},
    {BufferRole::Accum, "accum"},
    {BufferRole::InitialState, "initial_state"},
    {BufferRole::FinalState, "final_state"},
    {BufferRole::Checkpoint, "checkpoint"},
    {BufferRole::ForwardOutput, "forward_output"},
    {BufferRole::ForwardInitialState, "forward_initial_state"},
    {BufferRole::Workspace, "workspace"},
};

BufferRole roleFrom(const std::string &buffer, const std::string &name) {
  for (auto [role, text] : kRoles)
    if (name == text) return role;
  throw CudaError("buffer '" + buffer + "' has the unknown role '" + name + "'");
}

const char *paramKey(ParamDesc::Kind kind) {
  return kind == ParamDesc::Kind::Buffer ? "buffer" : kind == ParamDesc::Kind::Int32 ? "i32" : "i64";
}

nlohmann::json launchesJson(const std::vector<LaunchDesc> &launches) {
  nlohmann::json out = nlohmann::json::array();
  for (const LaunchDesc &l : launches) {
    nlohmann::json params = nlohmann::json::array();
    for (const ParamDesc &p : l.params) params.push_back({{paramKey(p.kind), p.value}});
    out.push_back({{"kernel", l.kernel}, {"grid", l.grid}, {"block", l.block}, {"shared_bytes", l.sharedBytes},
                   {"params", params}});
  }
  return out;
}

LaunchDesc launchFrom(const nlohmann::json &j) {
  LaunchDesc l;
  l.kernel = j.at("kernel").get<std::string>();
  for (size_t i = 0; i < 3; ++i) l.grid[i] = j.at("grid").at(i).get<std::string>();
  l.block = j.at("block").get<int>();
  l.sharedBytes = j.at("shared_bytes").get<std::string>();
  for (const nlohmann::json &p : j.at("params")) {
    if (p.contains("buffer")) l.params.push_back({ParamDesc::Kind::Buffer, p.at("buffer").get<std::string>()});
    else if (p.contains("i32")) l.params.push_back({ParamDesc::Kind::Int32, p.at("i32").get<std::string>()});
    else l.params.push_back({ParamDesc::Kind::Int64, p.at("i64").get<std::string>()});
  }
  return l;
}

RecurrenceDesc recurrenceFrom(const nlohmann::json &j, const std::map<std::string, std::string> &sources) {
  RecurrenceDesc r;
  r.name = j.at("name").get<std::string>();
  r.adjointOf = j.value("adjoint_of", "");
  r.backward = j.value("backward", "");
  r.reverse = j.at("direction").get<std::string>() == "reverse";
  r.file = j.at("source").get<std::string>();
  auto source = sources.find(r.file);
  if (source == sources.end()) throw CudaError("recurrence '" + r.name + "' names the source '" + r.file + "', which is missing");
  r.source = source->second;
  r.defines = j.at("defines").get<std::map<std::string, std::string>>();
  r.channelDims = j.at("layout").at("channel_dims").get<std::vector<std::string>>();
  r.registerDims = j.at("layout").at("register_dims").get<std::vector<std::string>>();
  r.layoutNote = j.at("layout").at("note").get<std::string>();
  r.laneDim = j.at("layout").value("lane_dim", std::string());
  if (!r.laneDim.empty() && std::find(r.registerDims.begin(), r.registerDims.end(), r.laneDim) == r.registerDims.end())
    throw CudaError("recurrence '" + r.name + "' deals '" + r.laneDim + "' to lanes, which is not one of its register dimensions");
  r.channels = j.at("channels").get<std::string>();
  r.stateRegisters = j.value("state_registers", std::string("0"));
  r.stepInstructions = j.value("step_instructions", std::string("0"));
  r.chainGroup = j.value("chain_group", kManifestChainGroup);
  if (r.chainGroup < 1) throw CudaError("recurrence '" + r.name + "' has chain_group " + std::to_string(r.chainGroup) + ", not a positive count");
  for (const nlohmann::json &b : j.at("buffers"))
    r.buffers.push_back({b.at("name").get<std::string>(), roleFrom(b.at("name").get<std::string>(), b.at("role").get<std::string>()),
                         b.at("dtype").get<std::string>(), b.at("shape").get<std::vector<std::string>>(),
                         b.at("optional").get<bool>(), b.value("for_backward", false)});
  r.zeroInit = j.at("zero_init").get<std::vector<std::string>>();
  for (const nlohmann::json &l : j.at("strategies").at("sequential")) r.sequential.push_back(launchFrom(l));
  for (const nlohmann::json &l : j.at("strategies").at("chunked")) r.chunked.push_back(launchFrom(l));
  return r;
}

}  // namespace

bool countsAsIdeal(const BufferDesc &b, bool backward) {
  if (b.role == BufferRole::Input || b.role == BufferRole::Param || b.role == BufferRole::Output) return true;
  return backward && b.role == BufferRole::Accum;
}

const char *roleName(BufferRole role) {
  for (auto [r, text] : kRoles)
    if (r == role) return text;
  return "unknown";
}

const BufferDesc *RecurrenceDesc::buffer(const std::string &name) const {
  for (const BufferDesc &b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

namespace {

nlohmann::json layoutJson(const RecurrenceDesc &rec) {
  nlohmann::json layout = {{"channel_dims", rec.channelDims}, {"register_dims", rec.registerDims}, {"note", rec.layoutNote}};
  if (!rec.laneDim.empty()) layout["lane_dim"] = rec.laneDim;
  return layout;
}

}  // namespace

nlohmann::json toManifest(const std::vector<RecurrenceDesc> &recurrences) {
  nlohmann::json list = nlohmann::json::array();
  for (const RecurrenceDesc &rec : recurrences) {
    nlohmann::json buffers = nlohmann::json::array();
    for (const BufferDesc &b : rec.buffers) {
      nlohmann::json entry = {
          {"name", b.name}, {"role", roleName(b.role)}, {"dtype", b.dtype}, {"shape", b.shape}, {"optional", b.optional}};
      if (b.role == BufferRole::Checkpoint && rec.adjointOf.empty()) entry["for_backward"] = b.forBackward;
      buffers.push_back(entry);
    }
    nlohmann::json entry = {
        {"name", rec.name},
        {"direction", rec.reverse ? "reverse" : "forward"},
        {"source", rec.file},
        {"defines", rec.defines},
        {"layout", layoutJson(rec)},
        {"channels", rec.channels},
        {"state_registers", rec.stateRegisters},
        {"step_instructions", rec.stepInstructions},
        {"chain_group", rec.chainGroup},
        {"buffers", buffers},
        {"zero_init", rec.zeroInit},
        {"strategies", {{"sequential", launchesJson(rec.sequential)}, {"chunked", launchesJson(rec.chunked)}}},
    };
    if (!rec.adjointOf.empty()) entry["adjoint_of"] = rec.adjointOf;
    if (!rec.backward.empty()) entry["backward"] = rec.backward;
    list.push_back(entry);
  }
  return nlohmann::json{{"format", kManifestFormat}, {"version", kManifestVersion}, {"recurrences", list}};
}

std::vector<RecurrenceDesc> fromManifest(const nlohmann::json &manifest, const std::map<std::string, std::string> &sources) {
  if (manifest.at("format").get<std::string>() != kManifestFormat)
    throw CudaError("it is not a scanforge CUDA package manifest (format '" + manifest.at("format").get<std::string>() + "')");
  if (manifest.at("version").get<int>() != kManifestVersion)
    throw CudaError("it has version " + std::to_string(manifest.at("version").get<int>()) + "; this runtime reads version " +
                    std::to_string(kManifestVersion));
  std::vector<RecurrenceDesc> out;
  for (const nlohmann::json &r : manifest.at("recurrences")) out.push_back(recurrenceFrom(r, sources));
  return out;
}

}  // namespace scanforge::cuda
