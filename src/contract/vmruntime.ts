// vk-cocoon's runtime write-back; the operator writes it itself for static toolboxes.

import { parseGoIntNumber } from "./goint.ts";
import { ANN_IP, ANN_VM_ID, ANN_VNC_PORT } from "./keys.ts";

export interface VMRuntime {
  vmID: string;
  ip: string;
  vncPort: number;
}

/** Writes non-empty strings and a positive VNC port; never deletes. */
export function applyVMRuntime(annotations: Record<string, string>, runtime: VMRuntime): void {
  if (runtime.vmID) annotations[ANN_VM_ID] = runtime.vmID;
  if (runtime.ip) annotations[ANN_IP] = runtime.ip;
  if (runtime.vncPort > 0) annotations[ANN_VNC_PORT] = String(runtime.vncPort);
}

/** Reads the runtime back; a VNC port that is not a base-10 int32 reads as 0. */
export function parseVMRuntime(annotations: Record<string, string> | undefined): VMRuntime {
  const a = annotations ?? {};
  const port = a[ANN_VNC_PORT] ? parseGoIntNumber(a[ANN_VNC_PORT], 32) : undefined;
  return { vmID: a[ANN_VM_ID] ?? "", ip: a[ANN_IP] ?? "", vncPort: port ?? 0 };
}
