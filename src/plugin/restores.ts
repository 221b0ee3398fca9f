// CocoonRestores as the plugin reads and judges them (docs/checkpoints.md): the --wait goal of
// `restore`, Restored, or the operator's reason when it refused or failed.

import type { CocoonRestore } from "../apis/v1alpha1/types.ts";
import { PluginError } from "./errors.ts";
import type { Verdict } from "./wait.ts";

/** The CRD is missing (404 on the collection): say what to apply instead of "not found". */
export function restoresNotServed(): PluginError {
  return new PluginError(
    "the cluster does not serve CocoonRestore (cocoonset.cocoonstack.io/v1alpha1): apply config/crd (bases/cocoonset.cocoonstack.io_cocoonrestores.yaml) and config/rbac first",
  );
}

export function judgeRestore(r: CocoonRestore | undefined, name: string): Verdict {
  if (!r || r.metadata.deletionTimestamp) {
    return { kind: "failed", reason: "Deleted", message: `cocoonrestore "${name}" was deleted` };
  }
  const phase = r.status?.phase;
  if (phase === "Restored") {
    return { kind: "done", summary: `cocoonrestore "${name}" is Restored: ${r.status?.message ?? ""}` };
  }
  if (phase === "Failed") {
    return {
      kind: "failed",
      reason: r.status?.reason || "Failed",
      message: `cocoonrestore "${name}" is Failed (${r.status?.reason ?? "no reason"}): ${r.status?.message ?? ""}`,
    };
  }
  const message = r.status?.message ? `: ${r.status.message}` : "";
  return { kind: "waiting", progress: `phase ${phase ?? "(none)"}${message}` };
}
