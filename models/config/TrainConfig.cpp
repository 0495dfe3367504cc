#include "models/config/TrainConfig.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "dsl/Diagnostics.h"

namespace scanforge::config {
namespace {

// Reads typed fields out of a located JSON tree and reports mistakes at their location.
class Reader {
 public:
  explicit Reader(const std::map<std::string, std::string> &texts) : texts_(texts) {}

  [[noreturn]] void fail(const Location &at, const std::string &message, const std::string &hint = "") const {
    auto it = texts_.find(at.file);
    throw ConfigError(locatedMessage(it == texts_.end() ? "" : it->second, at, message, hint));
  }

  // Checks that `object` only has keys in `allowed`.
  void keys(const Json &object, const std::string &section, const std::vector<std::string> &allowed) const {
    if (object.kind != Json::Kind::Object) fail(object.where, "'" + section + "' must be an object");
    for (size_t i = 0; i < object.members.size(); ++i) {
      const std::string &key = object.members[i].first;
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      std::string guess = dsl::closestMatch(key, allowed);
      std::string all;
      for (const std::string &a : allowed) all += (all.empty() ? "" : ", ") + a;
      fail(object.keyLocations[i], "unknown key '" + key + "' in '" + section + "'",
           guess.empty() ? "the keys of '" + section + "' are: " + all : "did you mean '" + guess + "'?");
    }
  }

  void read(const Json &object, const char *key, std::string &out) const {
    if (const Json *v = object.find(key)) {
      if (v->kind != Json::Kind::String) fail(v->where, std::string("'") + key + "' must be a string, not " + Json::kindName(v->kind));
      out = v->string;
    }
  }
  void read(const Json &object, const char *key, bool &out) const {
    if (const Json *v = object.find(key)) {
      if (v->kind != Json::Kind::Bool) fail(v->where, std::string("'") + key + "' must be true or false, not " + Json::kindName(v->kind));
      out = v->boolean;
    }
  }
  void read(const Json &object, const char *key, double &out, double lo, double hi) const {
    if (const Json *v = object.find(key)) {
      if (v->kind != Json::Kind::Number) fail(v->where, std::string("'") + key + "' must be a number, not " + Json::kindName(v->kind));
      if (!(v->number >= lo && v->number <= hi))
        fail(v->where, std::string("'") + key + "' must be in [" + num(lo) + ", " + num(hi) + "], not " + num(v->number));
      out = v->number;
    }
  }
  template <typename Int>
  void read(const Json &object, const char *key, Int &out, double lo, double hi) const {
    if (const Json *v = object.find(key)) {
      if (v->kind != Json::Kind::Number || v->number != std::floor(v->number))
        fail(v->where, std::string("'") + key + "' must be a whole number");
      if (!(v->number >= lo && v->number <= hi))
        fail(v->where, std::string("'") + key + "' must be in [" + num(lo) + ", " + num(hi) + "], not " + num(v->number));
      out = static_cast<Int>(v->number);
    }
  }
  void oneOf(const Json &object, const char *key, const std::string &value, const std::vector<std::string> &allowed) const {
    if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
    const Json *v = object.find(key);
    std::string guess = dsl::closestMatch(value, allowed), all;
    for (const std::string &a : allowed) all += (all.empty() ? "" : ", ") + a;
    fail(v ? v->where : object.where, std::string("'") + key + "' must be one of " + all + ", not '" + value + "'",
         guess.empty() ? "" : "did you mean '" + guess + "'?");
  }

  static std::string num(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  }

  InitSpec init(const Json &value, const std::string &what) const {
    static const std::map<std::string, std::vector<std::string>> kinds = {
        {"zeros", {}}, {"ones", {}}, {"constant", {"value"}}, {"uniform", {"low", "high"}}, {"normal", {"std"}},
        {"s4d_real", {}}, {"lru_nu", {"r_min", "r_max"}}, {"lru_gamma", {"r_min", "r_max"}},
        {"standard", {"offset"}}, {"chrono", {"t_max", "sign"}}, {"ugi", {"sign"}}, {"gumbel", {"alpha", "tau", "sign"}},
    };
    InitSpec spec;
    const Json *kind = &value;
    if (value.kind == Json::Kind::Object) {
      kind = value.find("init");
      if (!kind) fail(value.where, what + " needs an \"init\" key", "e.g. {\"init\": \"gumbel\", \"alpha\": 0, \"tau\": 0.5}");
    }
    if (kind->kind != Json::Kind::String) fail(kind->where, what + " must name an initialiser (a string)");
    spec.kind = kind->string;
    auto it = kinds.find(spec.kind);
    if (it == kinds.end()) {
      std::vector<std::string> names;
      for (auto &[k, args] : kinds) names.push_back(k);
      std::string guess = dsl::closestMatch(spec.kind, names), all;
      for (const std::string &n : names) all += (all.empty() ? "" : ", ") + n;
      fail(kind->where, "unknown initialiser '" + spec.kind + "' for " + what,
           guess.empty() ? "initialisers: " + all : "did you mean '" + guess + "'?");
    }
    if (value.kind == Json::Kind::Object) {
      std::vector<std::string> allowed = it->second;
      allowed.push_back("init");
      keys(value, what, allowed);
      for (const std::string &arg : it->second) {
        double v = NAN;
        read(value, arg.c_str(), v, -1e9, 1e9);
        if (!std::isnan(v)) spec.args[arg] = v;
      }
    }
    return spec;
  }

 private:
  const std::map<std::string, std::string> &texts_;
};

// Applies "a.b.c=value" to the document; the value is JSON (a bare word is taken as a string).
void applyOverride(Json &root, const std::string &text, std::map<std::string, std::string> &texts, int index) {
  std::string name = "<--set " + std::to_string(index + 1) + ">";
  texts[name] = text;
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(locatedMessage(text, {name, 1, 1}, "an override has the form section.key=value, not '" + text + "'"));
  std::string path = text.substr(0, eq), valueText = text.substr(eq + 1);
  Json value;
  try {
    value = Json::parse(valueText, name);
  } catch (const ConfigError &) {
    value.kind = Json::Kind::String;  // a bare word: a string
    value.string = valueText;
  }
  value.where = {name, 1, static_cast<int>(eq) + 2};
  Json *node = &root;
  std::stringstream parts(path);
  std::vector<std::string> keys;
  for (std::string part; std::getline(parts, part, '.');) keys.push_back(part);
  for (size_t i = 0; i < keys.size(); ++i) {
    Json *child = node->find(keys[i]);
    if (!child) {
      Json fresh;
      fresh.kind = i + 1 == keys.size() ? value.kind : Json::Kind::Object;
      fresh.where = {name, 1, 1};
      node->members.emplace_back(keys[i], fresh);
      node->keyLocations.push_back({name, 1, 1});
      child = &node->members.back().second;
    }
    if (i + 1 == keys.size()) *child = value;
    else if (child->kind != Json::Kind::Object)
      throw ConfigError(locatedMessage(text, {name, 1, 1}, "'" + keys[i] + "' is not a section, so '" + path + "' cannot be set"));
    node = child;
  }
}

TrainConfig bind(const Json &root, const Reader &r) {
  TrainConfig c;
  r.keys(root, "the configuration", {"model", "task", "train", "output"});
  if (const Json *m = root.find("model")) {
    r.keys(*m, "model", {"recurrence", "models_dir", "layers", "embed", "expansion", "dims", "conv", "mlp",
                         "mlp_expansion", "output_gating", "norm", "dropout", "params", "gate_bias", "gate_bias_first_layer_only"});
    ModelConfig &mc = c.model;
    r.read(*m, "recurrence", mc.recurrence);
    r.read(*m, "models_dir", mc.modelsDir);
    r.read(*m, "layers", mc.layers, 1, 64);
    r.read(*m, "embed", mc.embed, 1, 1 << 16);
    r.read(*m, "expansion", mc.expansion, 1, 64);
    r.read(*m, "conv", mc.conv);
    r.read(*m, "mlp", mc.mlp);
    r.read(*m, "mlp_expansion", mc.mlpExpansion, 1, 64);
    r.read(*m, "output_gating", mc.outputGating, 0, 1 << 16);
    r.read(*m, "norm", mc.norm);
    r.oneOf(*m, "norm", mc.norm, {"layernorm", "rmsnorm", "none"});
    r.read(*m, "dropout", mc.dropout, 0.0, 0.99);
    r.read(*m, "gate_bias_first_layer_only", mc.gateBiasFirstLayerOnly);
    if (const Json *dims = m->find("dims")) {
      if (dims->kind != Json::Kind::Object) r.fail(dims->where, "'dims' must map dimension names to sizes");
      for (auto &[name, v] : dims->members) {
        int64_t size = 0;
        r.read(*dims, name.c_str(), size, 1, 1 << 16);
        if (name == "d") r.fail(v.where, "'d' is expansion * embed; set 'expansion' instead");
        mc.dims[name] = size;
      }
    }
    for (auto [key, target] : {std::pair{"params", &mc.params}, std::pair{"gate_bias", &mc.gateBias}})
      if (const Json *section = m->find(key)) {
        if (section->kind != Json::Kind::Object) r.fail(section->where, std::string("'") + key + "' must be an object");
        for (auto &[name, v] : section->members) (*target)[name] = r.init(v, std::string(key) + "." + name);
      }
  }
  if (const Json *t = root.find("task")) {
    r.keys(*t, "task", {"name", "data", "context", "args"});
    r.read(*t, "name", c.task.name);
    r.oneOf(*t, "name", c.task.name, {"char_lm", "selective_copy", "copy", "in_context_regression", "teacher_student"});
    r.read(*t, "data", c.task.data);
    r.read(*t, "context", c.task.context, 1, 1 << 20);
    if (const Json *args = t->find("args")) {
      if (args->kind != Json::Kind::Object) r.fail(args->where, "'args' must be an object of numbers");
      for (auto &[name, v] : args->members) {
        double value = 0;
        r.read(*args, name.c_str(), value, -1e12, 1e12);
        c.task.args[name] = value;
      }
    }
    if (c.task.name == "char_lm" && c.task.data.empty()) {
      const Json *name = t->find("name");
      r.fail(name ? name->where : t->where, "the char_lm task needs 'data', the text file to train on",
             "e.g. \"data\": \"../shared/data/tinyshakespeare.txt\"");
    }
  }
  if (const Json *t = root.find("train")) {
    TrainSection &ts = c.train;
    r.keys(*t, "train", {"steps", "batch", "accumulate", "lr", "weight_decay", "beta1", "beta2", "warmup",
                         "min_lr_ratio", "clip", "seed", "eval_every", "eval_batches", "early_stopping", "log_every",
                         "checkpoint_every", "device"});
    r.read(*t, "steps", ts.steps, 1, 1e9);
    r.read(*t, "batch", ts.batch, 1, 1 << 20);
    r.read(*t, "accumulate", ts.accumulate, 1, 1 << 16);
    r.read(*t, "lr", ts.lr, 0.0, 10.0);
    r.read(*t, "weight_decay", ts.weightDecay, 0.0, 10.0);
    r.read(*t, "beta1", ts.beta1, 0.0, 0.999999);
    r.read(*t, "beta2", ts.beta2, 0.0, 0.999999);
    r.read(*t, "warmup", ts.warmup, 0, 1e9);
    r.read(*t, "min_lr_ratio", ts.minLrRatio, 0.0, 1.0);
    r.read(*t, "clip", ts.clip, 0.0, 1e9);
    r.read(*t, "seed", ts.seed, 0, 9.0e15);
    r.read(*t, "eval_every", ts.evalEvery, 1, 1e9);
    r.read(*t, "eval_batches", ts.evalBatches, 1, 1e6);
    r.read(*t, "early_stopping", ts.earlyStopping, 0, 1e9);
    r.read(*t, "log_every", ts.logEvery, 1, 1e9);
    r.read(*t, "checkpoint_every", ts.checkpointEvery, 0, 1e9);
    r.read(*t, "device", ts.device);
    r.oneOf(*t, "device", ts.device, {"auto", "cpu", "cuda"});
    if (ts.warmup > ts.steps) {
      const Json *w = t->find("warmup");
      r.fail(w ? w->where : t->where, "'warmup' (" + std::to_string(ts.warmup) + ") is longer than 'steps' (" +
                                          std::to_string(ts.steps) + ")", "warm-up steps are part of the run");
    }
  }
  if (const Json *o = root.find("output")) {
    r.keys(*o, "output", {"dir", "plot", "sample_tokens", "sample_prompt"});
    r.read(*o, "dir", c.output.dir);
    r.read(*o, "plot", c.output.plot);
    r.read(*o, "sample_tokens", c.output.sampleTokens, 0, 1e7);
    r.read(*o, "sample_prompt", c.output.samplePrompt);
  }
  return c;
}

}  // namespace

TrainConfig parseTrainConfig(const std::string &text, const std::string &name, const std::vector<std::string> &overrides) {
  std::map<std::string, std::string> texts = {{name, text}};
  Json root = Json::parse(text, name);
  if (root.kind != Json::Kind::Object)
    throw ConfigError(locatedMessage(text, root.where, "a configuration is a JSON object"));
  for (size_t i = 0; i < overrides.size(); ++i) applyOverride(root, overrides[i], texts, static_cast<int>(i));
  TrainConfig config = bind(root, Reader(texts));
  config.source = name;
  config.text = text;
  config.overrides = overrides;
  return config;
}

TrainConfig loadTrainConfig(const std::string &path, const std::vector<std::string> &overrides) {
  std::ifstream in(path);
  if (!in) throw ConfigError(path + ": error: cannot open the configuration file");
  std::stringstream buf;
  buf << in.rdbuf();
  return parseTrainConfig(buf.str(), path, overrides);
}

}  // namespace scanforge::config
