#include "compiler/mlir/Target/Reference/Gradients.h"

#include "compiler/mlir/Dialect/Scan/Analysis/Ports.h"

namespace scanforge::reference {

Gradients runBackward(scan::RecurrenceOp backward, const RunInputs &forward, const RunResult &forwardRun,
                      const GradientSeeds &seeds) {
  scan::Ports ports(backward);
  auto adjoint = [&](scan::PortKind kind, const std::string &primal) -> const std::string & {
    const scan::Port *p = ports.adjoint(kind, primal);
    if (!p) throw ShapeError(backward.getSymName().str() + " has no adjoint of '" + primal + "'");
    return p->name;
  };
  RunInputs in;
  in.inputs = forward.inputs;
  in.params = forward.params;
  in.saved = forwardRun.states;
  in.savedInitial = forward.initial;
  for (auto &[name, t] : seeds.outputs) in.inputs[adjoint(scan::PortKind::Input, name)] = t;
  for (auto &[name, t] : seeds.finals) in.initial[adjoint(scan::PortKind::State, name)] = t;
  RunResult r = run(backward, in);

  Gradients g;
  for (const scan::Port &p : ports.outputs())
    if (p.adjointOf) g.inputs[*p.adjointOf] = r.outputs.at(p.name);
  for (const scan::Port &p : ports.accums())
    if (p.adjointOf) g.params[*p.adjointOf] = r.accums.at(p.name);
  for (const scan::Port &p : ports.states())
    if (p.adjointOf) g.initial[*p.adjointOf] = r.finals.at(p.name);
  return g;
}

}  // namespace scanforge::reference
