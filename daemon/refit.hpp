// From stored runs to a model: the finished runs of one workload become a dataset over the
// parameters they all carry, fitted by the modeler. Pure: no I/O, no sockets.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "memwatch/model/model.hpp"
#include "memwatch/protocol/wire.hpp"
#include "store.hpp"

namespace memwatch::daemon {

inline constexpr const char* kHostTarget = protocol::kHostPeakTarget;
inline constexpr const char* kDeviceTarget = protocol::kDevicePeakTarget;

// The dataset of `target` over the finished runs that carry every parameter the first one
// does; empty rows when there is nothing to learn from.
model::Dataset dataset_of(const std::vector<Run>& runs, const std::string& target);

// The model, or nullopt (with `why`) when the runs are too few or all zero for this target.
// `axes`: the tensor axes stated for parameters (memwatchd --axes), used where the runs have them.
std::optional<model::Model> fit_runs(const std::vector<Run>& runs, const std::string& target,
                                     std::string& why, const std::map<std::string, int>& axes = {});

}  // namespace memwatch::daemon
