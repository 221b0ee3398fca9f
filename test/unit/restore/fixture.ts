// Shared pieces of the CocoonRestore unit tests: a restore, a checkpoint of the set's VMs, and the
// reconciler over FakeClient and FakeCheckpointRegistry writing one ordered log of API and registry calls.
import type { CocoonSet } from "../../../src/apis/v1/types.ts";
import type { CocoonCheckpoint, CocoonRestore } from "../../../src/apis/v1alpha1/types.ts";
import { FakeClock } from "../../../src/clock.ts";
import { COCOONCHECKPOINTS, COCOONRESTORES, COCOONSETS } from "../../../src/controller/resources.ts";
import { RestoreReconciler } from "../../../src/restore/reconciler.ts";
import { FakeCheckpointRegistry } from "../../support/checkpointregistry.ts";
import { cocoonSet, NS, SET } from "../../support/cocoonset.ts";
import { RecordingEvents } from "../../support/events.ts";
import { FakeClient } from "../../support/fakeclient.ts";
import { silentLogger } from "../../support/log.ts";

export const IMAGE = "ubuntu";
export const MAIN = `vk-${NS}-${SET}-0`;
export const SUB = `vk-${NS}-${SET}-1`;

export function restoreOf(name = "r1", checkpoint = "ck", setName = SET): CocoonRestore {
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonRestore",
    metadata: { name, namespace: NS, uid: `uid-${name}`, generation: 1 },
    spec: { cocoonSetRef: { name: setName }, checkpointRef: { name: checkpoint } },
  };
}

/** A Ready checkpoint of `setName` holding the main and sub-agent 1 (digests as the registry gave them). */
export function readyCheckpoint(
  digests: { main: string; sub: string },
  setName = SET,
  name = "ck",
): CocoonCheckpoint {
  const vm = (slot: number) => `vk-${NS}-${setName}-${slot}`;
  const deps = { image: IMAGE, backend: "cloud-hypervisor", os: "linux", snapshotCompatibilityClass: "" };
  return {
    apiVersion: "cocoonset.cocoonstack.io/v1alpha1",
    kind: "CocoonCheckpoint",
    metadata: { name, namespace: NS, uid: `uid-${name}` },
    spec: { cocoonSetRef: { name: setName } },
    status: {
      phase: "Ready",
      members: [
        { role: "main", slot: 0, vmName: vm(0), digest: digests.main, ...deps },
        { role: "sub-agent", slot: 1, vmName: vm(1), digest: digests.sub, ...deps },
      ],
    },
  };
}

/** The set with one sub-agent, in `phase` at its generation (suspend as given). */
export function setIn(phase: "Running" | "Suspended", suspend: boolean, generation = 1): CocoonSet {
  const cs = cocoonSet({ agent: { image: IMAGE, replicas: 1 }, suspend }, { generation });
  return {
    ...cs,
    status: {
      phase,
      observedGeneration: generation,
      readyAgents: 0,
      desiredAgents: 2,
      readyToolboxes: 0,
      desiredToolboxes: 0,
    },
  };
}

export function restoreFixture() {
  const log: string[] = [];
  const client = new FakeClient();
  const registry = new FakeCheckpointRegistry(log);
  const events = new RecordingEvents();
  const clock = new FakeClock();
  /**
   * A lagging cache: a checkpoint it shows instead of the stored one ("unavailable": the checkpoint
   * API is not served), restores it does not show yet.
   */
  const cachedCheckpoint: { value: CocoonCheckpoint | "unavailable" | undefined } = { value: undefined };
  const hiddenRestores = new Set<string>();
  /** How many store changes the cached restores lag behind (a restore watch behind the sets'). */
  const restoreCache = { lag: 0 };
  /** How many store changes the cached sets lag behind the API server. */
  const setCache = { lag: 0 };
  const reconciler = new RestoreReconciler({
    client,
    view: {
      getRestore: (ns, name) => client.peek<CocoonRestore>(COCOONRESTORES, ns, name, restoreCache.lag),
      listRestores: (ns) =>
        client
          .all<CocoonRestore>(COCOONRESTORES, ns)
          .filter((r) => !hiddenRestores.has(r.metadata.name ?? "")),
      getCocoonSet: (ns, name) => client.peek<CocoonSet>(COCOONSETS, ns, name, setCache.lag),
      listCocoonSets: (ns) => client.all<CocoonSet>(COCOONSETS, ns, setCache.lag),
      checkpoints: {
        getCheckpoint: (ns, name) =>
          cachedCheckpoint.value ?? client.peek<CocoonCheckpoint>(COCOONCHECKPOINTS, ns, name),
      },
    },
    registry,
    events,
    clock,
    log: silentLogger(),
  });
  const run = (name = "r1") => reconciler.reconcile({ namespace: NS, name }, new AbortController().signal);
  const restore = (name = "r1") => client.peek<CocoonRestore>(COCOONRESTORES, NS, name);
  const set = () => client.peek<CocoonSet>(COCOONSETS, NS, SET) as CocoonSet;
  /** The set's status as its own pass would write it (the status subresource). */
  const setStatus = (status: CocoonSet["status"]) => {
    const cs = set();
    client.seed(COCOONSETS, { ...cs, status });
  };
  return {
    log,
    client,
    registry,
    events,
    clock,
    run,
    restore,
    set,
    setStatus,
    cachedCheckpoint,
    hiddenRestores,
    restoreCache,
    setCache,
  };
}
