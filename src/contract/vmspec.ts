// The VMSpec annotation contract: 14 pod annotations from which vk-cocoon builds
// the VM. Drift checks compare ParseVMSpec(pod) with the spec-derived VMSpec field by field, so the
// values (defaults, canonical storage string) must match the Go operator's exactly.

import {
  type AgentSpec,
  DEFAULT_AGENT_MODE,
  DEFAULT_BACKEND,
  DEFAULT_OS,
  DEFAULT_SNAPSHOT_POLICY,
  DEFAULT_TOOLBOX_MODE,
  type ToolboxSpec,
  type VMOptions,
  withDefault,
} from "../apis/v1/types.ts";
import {
  ANN_BACKEND,
  ANN_CONN_TYPE,
  ANN_FORCE_PULL,
  ANN_FORK_FROM,
  ANN_IMAGE,
  ANN_MANAGED,
  ANN_MODE,
  ANN_NETWORK,
  ANN_NO_DIRECT_IO,
  ANN_OS,
  ANN_PROBE_PORT,
  ANN_SNAPSHOT_POLICY,
  ANN_STORAGE,
  ANN_VM_NAME,
  TRUE,
} from "./keys.ts";
import { canonicalQuantity } from "./quantity.ts";

export interface VMSpec {
  vmName: string;
  image: string;
  mode: string;
  os: string;
  storage: string;
  network: string;
  snapshotPolicy: string;
  managed: boolean;
  forcePull: boolean;
  forkFrom: string;
  connType: string;
  backend: string;
  noDirectIO: boolean;
  probePort: string;
}

const STRING_FIELDS = [
  ["vmName", ANN_VM_NAME],
  ["image", ANN_IMAGE],
  ["mode", ANN_MODE],
  ["os", ANN_OS],
  ["storage", ANN_STORAGE],
  ["network", ANN_NETWORK],
  ["snapshotPolicy", ANN_SNAPSHOT_POLICY],
  ["forkFrom", ANN_FORK_FROM],
  ["connType", ANN_CONN_TYPE],
  ["backend", ANN_BACKEND],
  ["probePort", ANN_PROBE_PORT],
] as const;

const BOOLEAN_FIELDS = [
  ["managed", ANN_MANAGED],
  ["forcePull", ANN_FORCE_PULL],
  ["noDirectIO", ANN_NO_DIRECT_IO],
] as const;

/** Writes non-empty strings and true booleans into the map; never deletes a key. */
export function applyVMSpec(annotations: Record<string, string>, spec: VMSpec): void {
  for (const [field, key] of STRING_FIELDS) {
    if (spec[field] !== "") annotations[key] = spec[field];
  }
  for (const [field, key] of BOOLEAN_FIELDS) {
    if (spec[field]) annotations[key] = TRUE;
  }
}

/** Reads the 14 keys back: strings raw ("" when absent), booleans true only for exactly "true". */
export function parseVMSpec(annotations: Record<string, string> | undefined): VMSpec {
  const a = annotations ?? {};
  return {
    vmName: a[ANN_VM_NAME] ?? "",
    image: a[ANN_IMAGE] ?? "",
    mode: a[ANN_MODE] ?? "",
    os: a[ANN_OS] ?? "",
    storage: a[ANN_STORAGE] ?? "",
    network: a[ANN_NETWORK] ?? "",
    snapshotPolicy: a[ANN_SNAPSHOT_POLICY] ?? "",
    managed: a[ANN_MANAGED] === TRUE,
    forcePull: a[ANN_FORCE_PULL] === TRUE,
    forkFrom: a[ANN_FORK_FROM] ?? "",
    connType: a[ANN_CONN_TYPE] ?? "",
    backend: a[ANN_BACKEND] ?? "",
    noDirectIO: a[ANN_NO_DIRECT_IO] === TRUE,
    probePort: a[ANN_PROBE_PORT] ?? "",
  };
}

/** Go's formatPort: decimal when positive, else "". */
function formatPort(port: number | undefined): string {
  return port !== undefined && port > 0 ? String(port) : "";
}

/** Throws QuantityError on a storage value Go could not have decoded. */
function fromVMOptions(
  options: VMOptions,
  vmName: string,
  image: string | undefined,
  mode: string,
  setSnapshotPolicy: string | undefined,
): VMSpec {
  return {
    vmName,
    image: image ?? "",
    mode,
    os: withDefault(options.os, DEFAULT_OS),
    storage: options.storage == null ? "" : canonicalQuantity(options.storage),
    network: options.network ?? "",
    snapshotPolicy: withDefault(setSnapshotPolicy, DEFAULT_SNAPSHOT_POLICY),
    managed: false,
    forcePull: options.forcePull === true,
    forkFrom: "",
    connType: options.connType ?? "",
    backend: withDefault(options.backend, DEFAULT_BACKEND),
    noDirectIO: options.noDirectIO === true,
    probePort: formatPort(options.probePort),
  };
}

/** FromAgentSpec: agents are always managed; forkFrom is the main VM for sub-agents, "" for main. */
export function vmSpecFromAgent(
  agent: AgentSpec,
  vmName: string,
  setSnapshotPolicy: string | undefined,
  forkFrom: string,
): VMSpec {
  const spec = fromVMOptions(
    agent,
    vmName,
    agent.image,
    withDefault(agent.mode, DEFAULT_AGENT_MODE),
    setSnapshotPolicy,
  );
  return { ...spec, forkFrom, managed: true };
}

/** FromToolboxSpec: managed unless the raw mode is `static` (an empty mode counts as managed). */
export function vmSpecFromToolbox(
  tb: ToolboxSpec,
  vmName: string,
  setSnapshotPolicy: string | undefined,
): VMSpec {
  const spec = fromVMOptions(
    tb,
    vmName,
    tb.image,
    withDefault(tb.mode, DEFAULT_TOOLBOX_MODE),
    setSnapshotPolicy,
  );
  return { ...spec, managed: tb.mode !== "static" };
}

/** Field-by-field equality over all 14 fields, as Go's struct ==. */
export function vmSpecEqual(a: VMSpec, b: VMSpec): boolean {
  return (
    STRING_FIELDS.every(([field]) => a[field] === b[field]) &&
    BOOLEAN_FIELDS.every(([field]) => a[field] === b[field])
  );
}
