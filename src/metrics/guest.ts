// The cocoon_operator_guest_hook_* collectors (docs/guest.md). Labels are the hook point and the
// result only: never the set, the pod or the hook's name, which grow without bound.

import { metricsRegistry } from "../controller/metrics.ts";
import { Counter, Histogram } from "../controller/prom.ts";

export const guestHookDurationSeconds = new Histogram({
  name: "cocoon_operator_guest_hook_duration_seconds",
  help: "Time one guest hook took, its retries included, by hook point (the built-in refresh counts as a hook).",
  labelNames: ["point"] as const,
  buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120],
  registers: [metricsRegistry],
});
export const guestHooksTotal = new Counter({
  name: "cocoon_operator_guest_hooks_total",
  help: "Guest hooks run, by hook point and result (succeeded; failed under Fail; ignored: failed under Ignore).",
  labelNames: ["point", "result"] as const,
  registers: [metricsRegistry],
});
