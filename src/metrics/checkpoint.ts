// The cocoon_operator_checkpoint_* collectors (docs/checkpoints.md), beside those of cocoon.ts.
// Labels are the namespace and the source set, never the checkpoint's own name (one series per
// checkpoint would grow without bound).

import { metricsRegistry } from "../controller/metrics.ts";
import { Counter, Histogram } from "../controller/prom.ts";

const SET_LABELS = ["namespace", "cocoonset"] as const;

export const checkpointDurationSeconds = new Histogram({
  name: "cocoon_operator_checkpoint_duration_seconds",
  help: "Time from the start of a checkpoint's copy to Ready.",
  labelNames: SET_LABELS,
  buckets: [0.1, 0.5, 1, 5, 15, 60, 300],
  registers: [metricsRegistry],
});
export const checkpointBytesTotal = new Counter({
  name: "cocoon_operator_checkpoint_bytes_total",
  help: "Snapshot bytes (config and layers) referenced by checkpoints that became Ready.",
  labelNames: SET_LABELS,
  registers: [metricsRegistry],
});
export const checkpointsTotal = new Counter({
  name: "cocoon_operator_checkpoints_total",
  help: "Checkpoint transitions: ready (tags written), pruned (keep-checkpoints), deleted (tags removed).",
  labelNames: [...SET_LABELS, "transition"] as const,
  registers: [metricsRegistry],
});
export const checkpointBranchesTotal = new Counter({
  name: "cocoon_operator_checkpoint_branches_total",
  help: "CocoonSets branched from a checkpoint (every copy done, restores recorded).",
  labelNames: SET_LABELS,
  registers: [metricsRegistry],
});
export const checkpointBranchBlobsTotal = new Counter({
  name: "cocoon_operator_checkpoint_branch_blobs_total",
  help: "Blobs a branch made available in a new VM's repository, by method (present, mounted or streamed).",
  labelNames: ["method"] as const,
  registers: [metricsRegistry],
});

export const checkpointBranchFailuresTotal = new Counter({
  name: "cocoon_operator_checkpoint_branch_failures_total",
  help: "Branch attempts whose snapshot copy failed (the pass retries with backoff).",
  labelNames: SET_LABELS,
  registers: [metricsRegistry],
});
