// reference_run REQUEST.json RESPONSE.json: compiles a .scan file, runs its forward and generated
// backward on the float64 reference interpreter, and writes outputs, final states and gradients.
// Lets test scripts in other languages (the PyTorch oracle) check the compiler end to end.
//
// Request:  {"model": path, "inputs": {name: {"shape": [..], "data": [..]}}, "params": {...},
//            "initial": {...}, "output_grads": {...}, "final_grads": {...}}
// Response: {"outputs": {...}, "finals": {...}, "input_grads": {...}, "param_grads": {...},
//            "initial_grads": {...}}
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "compiler/mlir/Driver.h"
#include "compiler/mlir/Target/Reference/Gradients.h"

using namespace scanforge;
using nlohmann::json;

static reference::TensorMap readTensors(const json &j) {
  reference::TensorMap map;
  if (j.is_null()) return map;
  for (auto &[name, t] : j.items()) {
    reference::Tensor tensor(t.at("shape").get<std::vector<int64_t>>());
    tensor.data = t.at("data").get<std::vector<double>>();
    if (tensor.data.size() != reference::Tensor::count(tensor.shape))
      throw std::runtime_error("tensor '" + name + "' has the wrong number of elements");
    map[name] = std::move(tensor);
  }
  return map;
}

static json writeTensors(const reference::TensorMap &map) {
  json j = json::object();
  for (auto &[name, t] : map) j[name] = {{"shape", t.shape}, {"data", t.data}};
  return j;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: reference_run REQUEST.json RESPONSE.json\n";
    return 1;
  }
  try {
    json request = json::parse(std::ifstream(argv[1]));
    scan::Session session;
    mlir::OwningOpRef<mlir::ModuleOp> module = session.load(request.at("model").get<std::string>(), std::cerr);
    if (!module || mlir::failed(session.compile(*module))) return 1;
    scan::RecurrenceOp fwd, bwd;
    for (auto rec : module->getOps<scan::RecurrenceOp>()) (rec.getAdjointOf() ? bwd : fwd) = rec;

    reference::RunInputs in;
    in.inputs = readTensors(request.at("inputs"));
    in.params = readTensors(request.value("params", json()));
    in.initial = readTensors(request.value("initial", json()));
    reference::RunResult forward = reference::run(fwd, in, /*keepStates=*/true);

    reference::Gradients grads = reference::runBackward(
        bwd, in, forward, {readTensors(request.at("output_grads")), readTensors(request.value("final_grads", json()))});

    json response;
    response["outputs"] = writeTensors(forward.outputs);
    response["finals"] = writeTensors(forward.finals);
    response["input_grads"] = writeTensors(grads.inputs);
    response["param_grads"] = writeTensors(grads.params);
    response["initial_grads"] = writeTensors(grads.initial);
    std::ofstream(argv[2]) << response.dump();
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "reference_run: " << e.what() << "\n";
    return 1;
  }
}
