// Storage helpers for the fault-injection properties (P13, P14, P16, P17, P18): a target's
// checkpoint tree seen as files (relative path -> bytes), copied into another target's storage
// (a "restart": a fresh process on the same durable storage), and the spec's expectation of a
// resume at one iteration.
//
// Contracts:
//  - Paths are relative to the tree's root, '/'-separated, directories implied by their files
//    (an empty directory is listed as "dir/" with no content).
//  - ReadTree reads the live tree (what calls see); after SimulatePowerLoss that is the durable one.
//  - WriteTree writes every file synced and every directory synced, so nothing it writes is lost
//    by a later SimulatePowerLoss. The destination root is made when missing (its parent must
//    exist).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/run_spec.h"
#include "base/env.h"
#include "targets/target_factory.h"

namespace ckptspec {

using StorageTree = std::map<std::string, std::string>;

Status ReadTree(Env* env, const std::string& root, StorageTree* tree);
Status WriteTree(Env* env, const std::string& root, const StorageTree& tree);
// "a (123 bytes), b/ (dir), ..." for scenario logs.
std::string DescribeTree(const StorageTree& tree);
// The first path whose presence or content differs ("" when equal), with the first differing byte.
std::string FirstTreeDifference(const StorageTree& a, const StorageTree& b);

// A restart: a fresh target of `factory` (made with `options`) holding a copy of `from`'s tree as
// calls see it now (after SimulatePowerLoss: what survived). *described, when given, gets the
// tree's DescribeTree.
Status RestartOnCopy(const TargetFactory& factory, const TargetOptions& options,
                     TargetUnderTest& from, std::unique_ptr<TargetUnderTest>* out,
                     std::string* described = nullptr);

// The spec's expected states of resuming `run` (same layout, no flags) from a checkpoint of
// `run` trained `iteration` iterations from its initial states.
Status ExpectedAtIteration(const RunSpec& run, int64_t iteration, std::vector<TrainingState>* out);

}  // namespace ckptspec
