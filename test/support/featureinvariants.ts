// The invariants of the chaos run across features (test/reliability/featurechaos.ts), beside the VM
// and registry timeline of InvariantChecker, into whose violations and timeline they report:
//  (f) no tag a live checkpoint or an unwoken VM needs is removed: every member tag of a Ready
//      CocoonCheckpoint that is not being deleted exists, and so does the `:hibernate` of every VM a
//      suspended set has not woken (its reclaim record's suspended and restore lists) and of every
//      hibernated VM of another namespace; the checkpoint a live pool's fromCheckpoint names is not
//      gone, and its tags stay while it is being deleted;
//  (g) no manifest DELETE hits a repository outside a set's own VMs: every DELETE the operator sends
//      names a repository `vk-<namespace>-<set>-<slot>` of a set of its namespace that the run has
//      seen, with a slot that set's specs have had (an agent slot up to its replicas, or a toolbox);
//  (h) a claim is bound to at most one set, ever, and a set to at most one claim: by the claims'
//      controller ownerReferences on sets (by uid) and the claims' status.cocoonSetRef, over every
//      watch event of the run;
//  (i) every object that has not converged says why: a condition (or status) reason that names a
//      cause, not only that work is under way, and a status of the object's current generation;
//  (k) a claim is Ready only once its PostClaim hooks succeeded: when a claim turns Ready, every pod
//      of its set that has not changed since carries a guest-hooks record for the VM it runs, with
//      that claim's phase Succeeded; and so does every pod of a Ready claim's set at convergence;
//  (l) a Running set that names a guest policy runs its post hooks first: at convergence each of its
//      pods carries a guest-hooks record for the VM it runs, with the post phase Succeeded.
// Each check takes plain observations, so the self-check plants a violation of each without a cluster.

import type { Pod } from "../../src/apis/core.ts";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import type {
  CocoonCheckpoint,
  CocoonClaim,
  CocoonPool,
  CocoonRestore,
} from "../../src/apis/v1alpha1/types.ts";
import { checkpointTag } from "../../src/checkpoint/keys.ts";
import { ANN_HIBERNATE_RECLAIM, ANN_VM_ID, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { hookable, runsReady } from "../../src/guest/decide.ts";
import { ANN_GUEST_POLICY } from "../../src/guest/keys.ts";
import { readGuestHooksRecord } from "../../src/guest/record.ts";
import type { RegistryRequest } from "./faultproxy.ts";
import type { InvariantChecker } from "./invariants.ts";

/**
 * Reasons that only say work is under way (or restate a phase): an object still showing one after
 * the run had time to converge is stuck without saying why.
 */
export const PROGRESS_REASONS: ReadonlySet<string> = new Set([
  "",
  "Reconciling",
  "AgentsNotReady",
  "AllAgentsReady",
  "SuspendInProgress",
  "NotSuspended",
  "Stable",
  "Pending",
  "Running",
  "Suspending",
  "Suspended",
  "Waking",
  "Migrating",
  "Starting",
  "Bound",
  "Copying",
  "Resuming",
  "Filling",
]);

export interface Unconverged {
  kind: string;
  name: string;
  /** What it was asked to reach. */
  wanted: string;
  /** What it shows instead. */
  shows: string;
  /** Its reasons that name a cause (empty: it does not say why). */
  reasons: string[];
}

type Conditioned = { status?: { conditions?: { type: string; status: string; reason: string }[] } };

/** The reasons of conditions that are not True (or of a True `Deleting`), that name a cause. */
function causes(obj: Conditioned, extra: (string | undefined)[] = []): string[] {
  const out: string[] = [];
  for (const c of obj.status?.conditions ?? []) {
    const notTrue = c.status !== "True" || c.type === "Deleting";
    if (notTrue && !PROGRESS_REASONS.has(c.reason)) out.push(`${c.type}=${c.reason}`);
  }
  for (const r of extra) if (r !== undefined && !PROGRESS_REASONS.has(r)) out.push(r);
  return out;
}

const deleting = (o: { metadata: { deletionTimestamp?: string } }) =>
  o.metadata.deletionTimestamp !== undefined;

/** A set is converged when it is Running (all agents and toolboxes ready) or Suspended as its spec asks, at its generation. */
export function setConverged(cs: CocoonSet): boolean {
  const s = cs.status;
  if (deleting(cs) || s === undefined || s.observedGeneration !== cs.metadata.generation) return false;
  if (cs.spec.suspend === true) return s.phase === "Suspended";
  return (
    s.phase === "Running" && s.readyAgents === s.desiredAgents && s.readyToolboxes === s.desiredToolboxes
  );
}

export interface Objects {
  sets: CocoonSet[];
  pools: CocoonPool[];
  claims: CocoonClaim[];
  restores: CocoonRestore[];
  checkpoints: CocoonCheckpoint[];
}

/** Every object that has not converged, with the reasons it gives. */
export function unconverged(objects: Objects): Unconverged[] {
  const out: Unconverged[] = [];
  const setByName = new Map(objects.sets.map((cs) => [cs.metadata.name ?? "", cs]));
  for (const cs of objects.sets) {
    if (setConverged(cs)) continue;
    const wanted = deleting(cs) ? "gone" : cs.spec.suspend === true ? "Suspended" : "Running";
    const s = cs.status;
    const stale = s?.observedGeneration !== cs.metadata.generation;
    out.push({
      kind: "CocoonSet",
      name: cs.metadata.name ?? "",
      wanted,
      shows: `${s?.phase ?? "no status"}${stale ? ` at generation ${s?.observedGeneration} of ${cs.metadata.generation}` : ""}${deleting(cs) ? " (being deleted)" : ""}`,
      // A status of an older generation says nothing about the spec the set is asked to reach.
      reasons: stale && !deleting(cs) ? [] : causes(cs),
    });
  }
  for (const pool of objects.pools) {
    const s = pool.status;
    if (
      !deleting(pool) &&
      s?.observedGeneration === pool.metadata.generation &&
      s?.ready === pool.spec.replicas &&
      s?.replicas === pool.spec.replicas
    )
      continue;
    const name = pool.metadata.name ?? "";
    // A pool that cannot fill says why through its own condition, or through each member not ready.
    const members = objects.sets.filter(
      (cs) => cs.metadata.labels?.["cocoonset.cocoonstack.io/pool"] === name,
    );
    const memberCauses = members
      .filter((cs) => !setConverged(cs))
      .map((cs) => ({ name: cs.metadata.name, reasons: causes(cs) }));
    const own = causes(pool);
    const viaMembers =
      memberCauses.length > 0 && memberCauses.every((m) => m.reasons.length > 0)
        ? memberCauses.map((m) => `${m.name}: ${m.reasons.join(",")}`)
        : [];
    out.push({
      kind: "CocoonPool",
      name,
      wanted: `${pool.spec.replicas} ready`,
      shows: `${s?.ready ?? 0} ready of ${s?.replicas ?? 0} (generation ${s?.observedGeneration} of ${pool.metadata.generation})`,
      reasons: [...own, ...viaMembers],
    });
  }
  for (const claim of objects.claims) {
    const ready = claim.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    if (ready && !deleting(claim)) continue;
    const bound = claim.status?.cocoonSetRef?.name;
    out.push({
      kind: "CocoonClaim",
      name: claim.metadata.name ?? "",
      wanted: deleting(claim) ? "gone" : "Ready",
      shows: `${claim.status?.phase ?? "no status"}${bound ? ` (set ${bound}${setByName.has(bound) ? "" : ", gone"})` : ""}`,
      reasons: causes(claim, [claim.status?.reason]),
    });
  }
  for (const restore of objects.restores) {
    const phase = restore.status?.phase;
    if ((phase === "Restored" || phase === "Failed") && !deleting(restore)) continue;
    out.push({
      kind: "CocoonRestore",
      name: restore.metadata.name ?? "",
      wanted: "Restored or Failed",
      shows: `${phase ?? "no status"} (${restore.status?.reason ?? ""})`,
      reasons: causes(restore, [restore.status?.reason]),
    });
  }
  for (const ck of objects.checkpoints) {
    const phase = ck.status?.phase;
    if ((phase === "Ready" || phase === "Failed") && !deleting(ck)) continue;
    const source = setByName.get(ck.spec.cocoonSetRef.name);
    // Pending is the answer while its set is not Suspended: the message names what it waits for.
    const waitsForSet =
      phase === "Pending" && !deleting(ck) && (source === undefined || !isSuspendedAtGeneration(source));
    out.push({
      kind: "CocoonCheckpoint",
      name: ck.metadata.name ?? "",
      wanted: deleting(ck) ? "gone" : "Ready",
      shows: `${phase ?? "no status"}${deleting(ck) ? " (being deleted)" : ""}`,
      reasons: waitsForSet ? ["Pending: its set is not Suspended"] : causes(ck),
    });
  }
  return out;
}

function isSuspendedAtGeneration(cs: CocoonSet): boolean {
  return cs.status?.phase === "Suspended" && cs.status.observedGeneration === cs.metadata.generation;
}

/** A tag that must exist: where, and which live object needs it. */
export interface NeededTag {
  vmName: string;
  tag: string;
  /** The digest it must still name, when known. */
  digest?: string;
  neededBy: string;
  /** The checkpoint whose tag this is is gone altogether: nothing to probe. */
  checkpointGone?: boolean;
}

/**
 * The tags live objects need: each member tag of a Ready checkpoint not being deleted, and the
 * `:hibernate` of each VM a set Suspended at its generation (not being deleted) has not woken: its
 * reclaim record's `suspended` and `restore` lists. A Running set's VMs run: their tags may go.
 */
export function neededTags(
  objects: Pick<Objects, "sets" | "checkpoints" | "pools">,
  /** Checkpoints a pool came to name only after their delete had begun: not the operator's to keep. */
  namedWhileDeleting: ReadonlySet<string> = new Set(),
): NeededTag[] {
  const out: NeededTag[] = [];
  const memberTags = (ck: CocoonCheckpoint, neededBy: string) => {
    for (const m of ck.status?.members ?? []) {
      if (!m.digest) continue;
      out.push({ vmName: m.vmName, tag: checkpointTag(ck.metadata.name ?? ""), digest: m.digest, neededBy });
    }
  };
  for (const ck of objects.checkpoints) {
    if (ck.status?.phase !== "Ready" || deleting(ck)) continue;
    memberTags(ck, `CocoonCheckpoint ${ck.metadata.name} (Ready)`);
  }
  // A pool's members keep branching from its fromCheckpoint: neither a delete nor a prune may take
  // that checkpoint's tags while the pool names it.
  for (const pool of objects.pools) {
    const name = pool.spec.fromCheckpoint;
    if (!name || deleting(pool) || namedWhileDeleting.has(name)) continue;
    const neededBy = `CocoonPool ${pool.metadata.name} (fromCheckpoint ${name})`;
    const ck = objects.checkpoints.find((c) => c.metadata.name === name);
    if (ck === undefined) {
      out.push({ vmName: "", tag: checkpointTag(name), neededBy, checkpointGone: true });
    } else if (ck.status?.phase === "Ready" && deleting(ck)) {
      memberTags(ck, neededBy);
    }
  }
  for (const cs of objects.sets) {
    if (cs.spec.suspend !== true || !setConverged(cs)) continue;
    const raw = cs.metadata.annotations?.[ANN_HIBERNATE_RECLAIM];
    if (!raw) continue;
    let record: { suspended?: unknown; restore?: unknown };
    try {
      record = JSON.parse(raw);
    } catch {
      continue;
    }
    const owed = new Set<string>();
    for (const list of [record.suspended, record.restore]) {
      if (Array.isArray(list)) for (const vm of list) if (typeof vm === "string") owed.add(vm);
    }
    for (const vmName of owed) {
      out.push({
        vmName,
        tag: TAG_HIBERNATE,
        neededBy: `CocoonSet ${cs.metadata.name} (${cs.status?.phase}, owes ${vmName} a wake)`,
      });
    }
  }
  return out;
}

/** Whether guest hooks hold the pod from Ready: a managed Linux guest whose VM runs Ready. */
export function hooksHold(pod: Pod): boolean {
  return runsReady(pod) && hookable(pod);
}

/**
 * What the guest-hooks record of a Ready pod lacks for the VM it runs now: its post phase Succeeded,
 * or (naming `claim`) that claim's PostClaim phase Succeeded. Undefined when nothing, or when hooks
 * do not hold the pod: one not Ready (hooks run once it is), hibernated, being deleted, or not a
 * managed Linux guest.
 */
export function hooksLacking(pod: Pod, phase: "post" | { claim: string }): string | undefined {
  const vmID = pod.metadata.annotations?.[ANN_VM_ID] ?? "";
  if (!hooksHold(pod)) return undefined;
  const record = readGuestHooksRecord(pod);
  const name = pod.metadata.name;
  if (record.vmID !== vmID)
    return `pod ${name} runs VM ${vmID}, but its guest-hooks record is ${record.vmID ? `VM ${record.vmID}'s` : "none"}`;
  if (phase === "post") {
    return record.post?.result === "Succeeded"
      ? undefined
      : `pod ${name}'s VM ${vmID} has its post phase ${record.post?.result ?? "not run"}`;
  }
  const done = record.claim?.name === phase.claim ? record.claim : undefined;
  if (done?.result === "Succeeded") return undefined;
  return `pod ${name}'s VM ${vmID} has claim ${phase.claim}'s PostClaim phase ${done?.result ?? "not run"}${record.claim && !done ? ` (its record names claim ${record.claim.name})` : ""}`;
}

/** A guest-hooks violation found at convergence: which pod's VM, under which invariant. */
export interface GuestFinding {
  invariant: "k" | "l";
  /** The pod's uid and the VM it runs: the same finding on a later read is the same VM still lacking. */
  key: string;
  podName: string;
  message: string;
}

/**
 * At convergence: each pod of a Ready claim's set lacking that claim's hooks (k), and each pod of a
 * Running set naming a guest policy lacking its post hooks (l). `podsOf` gives a set's pods.
 */
export function guestFindings(
  objects: Pick<Objects, "sets" | "claims">,
  podsOf: (set: string) => Pod[],
): GuestFinding[] {
  const out: GuestFinding[] = [];
  const find = (invariant: "k" | "l", pod: Pod, lacking: string | undefined, what: string) => {
    if (lacking === undefined) return;
    out.push({
      invariant,
      key: `${invariant}/${pod.metadata.uid}/${pod.metadata.annotations?.[ANN_VM_ID]}`,
      podName: pod.metadata.name ?? "",
      message: `${what}: ${lacking}`,
    });
  };
  for (const claim of objects.claims) {
    const set = claim.status?.cocoonSetRef?.name;
    const ready = claim.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
    if (!ready || set === undefined || deleting(claim)) continue;
    const name = claim.metadata.name ?? "";
    for (const pod of podsOf(set))
      find("k", pod, hooksLacking(pod, { claim: name }), `claim ${name} is Ready, bound to set ${set}`);
  }
  for (const cs of objects.sets) {
    const policy = cs.metadata.annotations?.[ANN_GUEST_POLICY];
    if (!policy || !setConverged(cs) || cs.status?.phase !== "Running") continue;
    const name = cs.metadata.name ?? "";
    for (const pod of podsOf(name))
      find("l", pod, hooksLacking(pod, "post"), `set ${name} (guest policy ${policy}) is Running`);
  }
  return out;
}

/** Reports into the run's InvariantChecker: one timeline, one list of violations. */
export class FeatureInvariants {
  private readonly checker: InvariantChecker;
  private readonly namespace: string;
  /** Per set name: the agent slots and toolboxes its specs have had. */
  private readonly slots = new Map<string, Set<string>>();
  /** Claim uid → set uids its ownerReference was on; set uid → claim uids. */
  private readonly setsOfClaim = new Map<string, Set<string>>();
  private readonly claimsOfSet = new Map<string, Set<string>>();
  /** Claim uid → set names its status bound. */
  private readonly refsOfClaim = new Map<string, Set<string>>();
  /** The latest observed set of each name: its uid and the claim uid controlling it. */
  private readonly latestSet = new Map<string, { uid: string; claimUid?: string }>();
  private readonly flagged = new Set<string>();
  readonly counts = {
    deletes: 0,
    setEvents: 0,
    claimEvents: 0,
    bindings: 0,
    /** Pods judged when their claim turned Ready (k), and those changed since, left unjudged. */
    claimPodsJudged: 0,
    claimPodsChangedSince: 0,
    /** Pods whose hooks were judged at convergence (k, l). */
    guestPodsAtConvergence: 0,
  };

  constructor(checker: InvariantChecker, namespace: string) {
    this.checker = checker;
    this.namespace = namespace;
  }

  /** Every version of a set the run sees (watch events, reads). */
  observeSet(cs: CocoonSet): void {
    this.counts.setEvents++;
    const name = cs.metadata.name ?? "";
    const uid = cs.metadata.uid ?? "";
    const slots = this.slots.get(name) ?? new Set<string>();
    this.slots.set(name, slots);
    for (let i = 0; i <= (cs.spec.agent?.replicas ?? 0); i++) slots.add(String(i));
    for (const tb of cs.spec.toolboxes ?? []) slots.add(tb.name);
    const owner = cs.metadata.ownerReferences?.find((o) => o.kind === "CocoonClaim" && o.controller === true);
    this.latestSet.set(name, { uid, ...(owner ? { claimUid: owner.uid } : {}) });
    if (!owner) return;
    const sets = this.setsOfClaim.get(owner.uid) ?? new Set<string>();
    this.setsOfClaim.set(owner.uid, sets);
    const claims = this.claimsOfSet.get(uid) ?? new Set<string>();
    this.claimsOfSet.set(uid, claims);
    if (!sets.has(uid)) this.counts.bindings++;
    sets.add(uid);
    claims.add(owner.uid);
    if (sets.size > 1) {
      this.flag(
        name,
        `claim ${owner.name} (uid ${owner.uid}) controls a second set: set uids ${[...sets].join(", ")}`,
      );
    }
    if (claims.size > 1) {
      this.flag(
        name,
        `set ${name} (uid ${uid}) bound to a second claim: claim uids ${[...claims].join(", ")}`,
      );
    }
  }

  /** Every version of a claim the run sees. */
  observeClaim(claim: CocoonClaim): void {
    this.counts.claimEvents++;
    const uid = claim.metadata.uid ?? "";
    const ref = claim.status?.cocoonSetRef?.name;
    if (ref === undefined) return;
    const refs = this.refsOfClaim.get(uid) ?? new Set<string>();
    this.refsOfClaim.set(uid, refs);
    refs.add(ref);
    if (refs.size > 1) {
      this.flag(ref, `claim ${claim.metadata.name} (uid ${uid}) reported sets ${[...refs].join(", ")}`);
    }
    const set = this.latestSet.get(ref);
    if (set?.claimUid !== undefined && set.claimUid !== uid) {
      this.flag(
        ref,
        `claim ${claim.metadata.name} (uid ${uid}) reports set ${ref}, which claim uid ${set.claimUid} bound`,
      );
    }
  }

  /** A request the operator sent the registry: a manifest DELETE must stay inside a set's own VMs. */
  observeRegistry(r: RegistryRequest): void {
    if (r.method !== "DELETE") return;
    const m = /^\/v2\/(.+)\/manifests\/([^/?]+)/.exec(r.path);
    if (!m) return;
    this.counts.deletes++;
    const repo = m[1] ?? "";
    const owner = this.ownerOf(repo);
    if (owner === undefined) {
      this.checker.flag(
        "g",
        repo,
        `the operator sent DELETE ${repo}@${m[2]} (→ ${r.status}): not a VM of any set of namespace ${this.namespace}`,
      );
    }
  }

  /** The set whose own VM the repository is, if any. */
  ownerOf(repo: string): string | undefined {
    const prefix = `vk-${this.namespace}-`;
    if (!repo.startsWith(prefix) || repo.includes("/")) return undefined;
    const rest = repo.slice(prefix.length);
    for (const [set, slots] of this.slots) {
      if (rest.startsWith(`${set}-`) && slots.has(rest.slice(set.length + 1))) return set;
    }
    return undefined;
  }

  /** Checks each needed tag with `exists`; a missing one is a violation. */
  async checkTags(
    needed: NeededTag[],
    exists: (vmName: string, tag: string) => Promise<string | undefined>,
  ): Promise<void> {
    for (const t of needed) {
      if (t.checkpointGone) {
        this.checker.flag("f", t.tag, `the checkpoint of ${t.tag} is gone, but ${t.neededBy} needs it`);
        continue;
      }
      const digest = await exists(t.vmName, t.tag);
      if (digest === undefined) {
        this.checker.flag("f", t.vmName, `${t.vmName}:${t.tag} is gone, but ${t.neededBy} needs it`);
      } else if (t.digest !== undefined && digest !== t.digest) {
        this.checker.flag(
          "f",
          t.vmName,
          `${t.vmName}:${t.tag} names ${digest}, not ${t.digest} that ${t.neededBy} recorded`,
        );
      }
    }
  }

  /**
   * (k) when `claim` (this version of it) turned Ready: each pod of its set, read right after, that
   * lacks the claim's hooks. A pod changed since the claim's write (a later resourceVersion: pods
   * and claims share one etcd's revisions) may run a VM restored or woken after it, whose hooks may
   * not have run yet: it is not judged. One that has not changed showed the same then.
   */
  checkClaimTurnedReady(claim: CocoonClaim, pods: Pod[]): void {
    const name = claim.metadata.name ?? "";
    const at = BigInt(claim.metadata.resourceVersion ?? "0");
    for (const pod of pods) {
      const lacking = hooksLacking(pod, { claim: name });
      if (lacking === undefined) {
        this.counts.claimPodsJudged++;
        continue;
      }
      if (BigInt(pod.metadata.resourceVersion ?? "0") > at) {
        this.counts.claimPodsChangedSince++;
        continue;
      }
      this.counts.claimPodsJudged++;
      this.flagOnce(
        "k",
        `vk-${this.namespace}-${pod.metadata.name}`,
        `claim ${name} turned Ready (resourceVersion ${at}, set ${claim.status?.cocoonSetRef?.name}) while ${lacking} (pod resourceVersion ${pod.metadata.resourceVersion})`,
      );
    }
  }

  /** (k) and (l) at convergence, each finding as guestFindings gives it. */
  flagGuest(findings: GuestFinding[]): void {
    for (const f of findings)
      this.flagOnce(f.invariant, `vk-${this.namespace}-${f.podName}`, `at convergence, ${f.message}`);
  }

  /** Flags each object in the list that gives no cause. */
  checkReasons(list: Unconverged[]): void {
    for (const u of list) {
      if (u.reasons.length > 0) continue;
      this.checker.flag(
        "i",
        u.name,
        `${u.kind} ${u.name} did not converge (wanted ${u.wanted}, shows ${u.shows}) and gives no reason why`,
      );
    }
  }

  /** Each violation once: a watch shows the same state again and again. */
  private flag(vmName: string, message: string): void {
    this.flagOnce("h", vmName, message);
  }

  private flagOnce(invariant: string, vmName: string, message: string): void {
    if (this.flagged.has(message)) return;
    this.flagged.add(message);
    this.checker.flag(invariant, vmName, message);
  }
}
