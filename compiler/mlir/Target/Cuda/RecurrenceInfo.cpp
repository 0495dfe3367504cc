#include "compiler/mlir/Target/Cuda/RecurrenceInfo.h"

#include <cctype>

namespace scanforge::cuda {

namespace {

bool isIdentifier(llvm::StringRef name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return llvm::all_of(name, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

}  // namespace

mlir::FailureOr<RecurrenceInfo> RecurrenceInfo::collect(scan::RecurrenceOp rec, scan::RecurrenceOp forward,
                                                        mlir::AnalysisManager analyses) {
  const scan::Ports &ports = analyses.getChildAnalysis<scan::Ports>(rec);
  for (size_t d = 0; d < ports.table().size(); ++d)
    if (!isIdentifier(ports.table().name(static_cast<int>(d))))
      return rec.emitError() << "the CUDA backend needs dimension names that are identifiers, not '"
                             << ports.table().name(static_cast<int>(d)) << "'";
  if (forward && forward.getDims() != rec.getDims())
    return rec.emitError() << "the backward recurrence's dimensions " << rec.getDims()
                           << " differ from its forward's " << forward.getDims();

  RecurrenceInfo info;
  info.op = rec;
  info.descending = rec.getReverse();
  info.inputs = ports.inputs();
  info.params = ports.params();
  info.outputs = ports.outputs();
  info.accums = ports.accums();
  info.states = ports.states();
  if (!forward) return info;
  const scan::BackwardSchedule &schedule = analyses.getChildAnalysis<scan::BackwardSchedule>(rec);
  if (!schedule.valid()) return mlir::failure();
  info.schedule = &schedule;
  return info;
}

const std::vector<scan::SavedState> &RecurrenceInfo::saved() const {
  static const std::vector<scan::SavedState> none;
  return schedule ? schedule->saved() : none;
}

int RecurrenceInfo::stateIndex(llvm::StringRef name) const {
  for (size_t i = 0; i < states.size(); ++i)
    if (states[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace scanforge::cuda
