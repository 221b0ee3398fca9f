// The invariant checker of the reliability suite. It listens to the simulator's VM record (every boot,
// restore, fork, hibernate, wake, destroy and refusal, in order) and to the registry proxy in front of
// the operator (every manifest DELETE the operator made), keeps one timeline of those plus the test
// driver's notes (spec edits, operator kills), and fails on the first violation of:
//  (a) a VM holding live state is destroyed only after it hibernated (its :hibernate manifest exists,
//      and the hibernate was asked for by a pod annotation this operator wrote) — except in teardown or
//      where the test declares an image change (the spec gave up that state);
//  (b) a :hibernate tag is deleted by the operator only while the VM restored or woken from it (after
//      its last hibernate) runs — except in teardown or where the test declares an image change;
//  (c) vk-cocoon never refuses a pod (no pod over a tag recorded from another image, no fork-from or
//      restore-marked pod it cannot serve), and never wakes a VM whose image the test changed: the
//      old pod drifted from the spec and is rebuilt, so a wake of it is wasted, and one still pulling
//      when the image rule drops the tag is refused (WakePullFailed).
//  (e) no tag a live checkpoint or an owed restore needs is ever deleted: a `ckpt-<name>` manifest goes
//      only once the test deleted that CocoonCheckpoint, the operator never reads a checkpoint
//      manifest it deleted (a branch or restore still copying from it), and a `:hibernate` the
//      operator wrote (a branch's or a restore's copy, owed a restore) is held to (b) like a push: it
//      goes only once the VM restored or woke from it.
// A DELETE names the manifest by digest (the registry refuses DELETE by tag), so each VM's last
// `:hibernate` digest is kept from the hibernate event or the operator's copy, and each checkpoint
// tag's from the registry's answers: only a DELETE of that digest (or of the tag) removes the tag,
// and its timeline line says so.
// (d), convergence, is checked by the driver once the chaos stops. Other checkers report into the same
// timeline and list through `flag` (test/support/featureinvariants.ts: (f) to (i)).

import { TAG_HIBERNATE } from "../../src/contract/keys.ts";
import type { VmEvent, VmRecord } from "../env/simulator/index.ts";
import type { RegistryProxy, RegistryRequest } from "./faultproxy.ts";

/** The checkpoint tags' prefix (src/checkpoint/keys.ts checkpointTag). */
const CHECKPOINT_TAG_PREFIX = "ckpt-";

export interface TimelineEntry {
  time: number;
  source: "vm" | "registry" | "driver";
  text: string;
  vmName?: string;
}

interface VmState {
  /** A VM of this name is live (on any node). */
  live: boolean;
  /** How the live VM started. */
  liveKind?: VmEvent["kind"];
  /** Sequence number of the last hibernate event, or of the operator's copy into `:hibernate`. */
  lastHibernate?: number;
  /** Sequence number of the last start (boot/restore/fork/wake). */
  lastStart?: number;
  /** The :hibernate tag exists, as far as the simulator's pushes and the operator's deletes say. */
  tag: boolean;
  /** The digest of the last :hibernate push, when the hibernate event named it. */
  hibernateDigest?: string;
}

export class InvariantViolation extends Error {}

export class InvariantChecker {
  readonly timeline: TimelineEntry[] = [];
  readonly violations: string[] = [];
  /** Counts by kind, for the report. */
  readonly counts = {
    vmEvents: 0,
    tagDeletes: 0,
    liveDestroys: 0,
    hibernatedDestroys: 0,
    checkpointTagDeletes: 0,
    hibernateCopies: 0,
  };
  /** Orders VM events and the operator's `:hibernate` copies on one line. */
  private seq = 0;
  /** Per repository: the digest of each checkpoint tag seen, and its checkpoint's name. */
  private readonly checkpointTags = new Map<string, Map<string, string>>();
  /** Checkpoints the test deleted: their tags may go. */
  private readonly deletedCheckpoints = new Set<string>();
  /** `<repo>@<digest>` of checkpoint tags the operator deleted, and their checkpoint. */
  private readonly goneCheckpointTags = new Map<string, string>();
  private readonly vms = new Map<string, VmState>();
  private readonly teardownPrefixes: string[] = [];
  private readonly imageChanged = new Set<string>();
  private readonly repoPrefix: string;
  private readonly teardownGraceMs: number;
  private graced = 0;
  private readonly reported = new Set<string>();
  private rejectFailed: (err: Error) => void = () => {};
  /** Rejects on the first violation; race it against the driver's waits. */
  readonly failed: Promise<never>;

  constructor(opts: {
    record: VmRecord;
    registry: RegistryProxy;
    repoPrefix?: string;
    /** How long a loss waits for its set to be declared in teardown before it counts; default 0. */
    teardownGraceMs?: number;
  }) {
    this.repoPrefix = opts.repoPrefix ?? "";
    this.teardownGraceMs = opts.teardownGraceMs ?? 0;
    this.failed = new Promise<never>((_, reject) => {
      this.rejectFailed = reject;
    });
    this.failed.catch(() => {});
    const record = opts.record;
    const append = record.append.bind(record);
    record.append = (event: VmEvent) => {
      append(event);
      this.onVm(event);
    };
    opts.registry.onRequest((r) => this.onRegistry(r));
  }

  /** A driver action, kept in the timeline. */
  note(text: string, vmName?: string): void {
    this.timeline.push({ time: Date.now(), source: "driver", text, ...(vmName ? { vmName } : {}) });
  }

  /** VMs whose name starts with `vmPrefix` belong to a set being deleted: destroys and deletes are expected. */
  teardown(vmPrefix: string): void {
    this.teardownPrefixes.push(vmPrefix);
    this.note(`teardown of ${vmPrefix}*`);
  }

  /** The test changed this VM's image: the image rule may drop its tag, and the old VM may go. */
  allowImageDrop(vmName: string): void {
    this.imageChanged.add(vmName);
  }

  /** The test deleted this CocoonCheckpoint: the operator may delete its tags (once nothing uses them). */
  checkpointDeleted(name: string): void {
    this.deletedCheckpoints.add(name);
    this.note(`delete checkpoint ${name}`);
  }

  /** Throws the first violation with the history that led to it. */
  check(): void {
    if (this.violations.length > 0) throw new InvariantViolation(this.violations[0]);
  }

  /** Live VMs as the checker tracks them. */
  liveVms(): string[] {
    return [...this.vms].filter(([, s]) => s.live).map(([name]) => name);
  }

  private state(vmName: string): VmState {
    let s = this.vms.get(vmName);
    if (!s) {
      s = { live: false, tag: false };
      this.vms.set(vmName, s);
    }
    return s;
  }

  private inTeardown(vmName: string): boolean {
    return this.teardownPrefixes.some((p) => vmName.startsWith(p));
  }

  private onVm(e: VmEvent): void {
    this.counts.vmEvents++;
    const seq = ++this.seq;
    const detail = e.detail ? ` (${e.detail})` : "";
    this.timeline.push({
      time: e.time,
      source: "vm",
      vmName: e.vmName,
      text: `${e.kind} ${e.vmName} pod=${e.podName}/${e.podUID.slice(0, 8)} node=${e.node} vm=${e.vmID.slice(0, 8)}${e.source ? ` source=${e.source}` : ""}${detail}`,
    });
    const s = this.state(e.vmName);
    switch (e.kind) {
      case "wake":
        if (this.imageChanged.has(e.vmName)) {
          this.violate("c", e.vmName, `pod ${e.podName} woken though its image changed: it is rebuilt`);
        }
        s.live = true;
        s.liveKind = e.kind;
        s.lastStart = seq;
        return;
      case "boot":
      case "restore":
      case "fork":
        s.live = true;
        s.liveKind = e.kind;
        s.lastStart = seq;
        return;
      case "hibernate":
        s.live = false;
        s.lastHibernate = seq;
        s.tag = true;
        s.hibernateDigest = /:hibernate (sha256:[0-9a-f]{64})$/.exec(e.detail ?? "")?.[1];
        return;
      case "destroy":
        if (e.vmID !== "") {
          // A live VM went with its pod: its state is lost unless the set is being deleted.
          this.counts.liveDestroys++;
          s.live = false;
          if (!this.inTeardown(e.vmName) && !this.imageChanged.has(e.vmName)) {
            this.violateOutsideTeardown(
              "a",
              e.vmName,
              `live VM ${e.vmName} (${e.vmID}) of pod ${e.podName} destroyed without a hibernate: its state is lost`,
            );
          }
        } else {
          this.counts.hibernatedDestroys++;
          if (
            !this.inTeardown(e.vmName) &&
            !this.imageChanged.has(e.vmName) &&
            !s.tag &&
            s.lastHibernate !== undefined
          ) {
            this.violateOutsideTeardown(
              "a",
              e.vmName,
              `pod ${e.podName} of hibernated VM ${e.vmName} deleted while its :hibernate manifest is gone`,
            );
          }
        }
        return;
      case "refuse":
        this.violate("c", e.vmName, `vk-cocoon refused pod ${e.podName}: ${e.detail ?? ""}`);
        return;
      default:
        return;
    }
  }

  private onRegistry(r: RegistryRequest): void {
    const m = /^\/v2\/(.+)\/manifests\/([^/?]+)/.exec(r.path);
    if (!m) return;
    const repo = m[1] ?? "";
    const vmName =
      this.repoPrefix && repo.startsWith(`${this.repoPrefix}/`)
        ? repo.slice(this.repoPrefix.length + 1)
        : repo;
    const reference = m[2] ?? "";
    const fault = r.fault ? ` [injected ${r.fault}]` : "";
    const s = this.state(vmName);
    const isDigest = reference.startsWith("sha256:");
    const tags = this.checkpointTags.get(repo) ?? new Map<string, string>();
    this.checkpointTags.set(repo, tags);
    if (reference.startsWith(CHECKPOINT_TAG_PREFIX) && r.status < 400 && r.digest) {
      tags.set(r.digest, reference.slice(CHECKPOINT_TAG_PREFIX.length));
    }
    if (r.method === "PUT" && reference === TAG_HIBERNATE && r.status === 201) {
      // The operator's copy into :hibernate (a branch or a restore): a snapshot owed a restore.
      this.counts.hibernateCopies++;
      s.tag = true;
      s.lastHibernate = ++this.seq;
      s.hibernateDigest = r.digest;
      this.timeline.push({
        time: r.time,
        source: "registry",
        vmName,
        text: `operator PUT ${repo}:${TAG_HIBERNATE} (a checkpoint's copy, owed a restore) → ${r.digest ?? "?"}`,
      });
      return;
    }
    const gone = isDigest ? this.goneCheckpointTags.get(`${repo}@${reference}`) : undefined;
    if (gone !== undefined && (r.method === "GET" || r.method === "HEAD") && r.status === 404) {
      this.violate(
        "e",
        vmName,
        `the operator read ${repo}@${reference}, checkpoint ${gone}'s manifest, after deleting it: a branch or restore still needed it`,
      );
      return;
    }
    if (r.method !== "DELETE" && r.status < 400 && !r.fault) return;
    const checkpoint = isDigest ? tags.get(reference) : undefined;
    // A digest when the checker saw no push digest (an event without one) is taken to be the tag's,
    // unless it is a checkpoint tag's.
    const namesTag =
      reference === TAG_HIBERNATE ||
      (isDigest &&
        (s.hibernateDigest === undefined ? checkpoint === undefined : reference === s.hibernateDigest));
    const named = isDigest && reference === s.hibernateDigest ? ` (= its last :${TAG_HIBERNATE} push)` : "";
    this.timeline.push({
      time: r.time,
      source: "registry",
      vmName,
      text: `operator ${r.method} ${repo}:${reference}${named} → ${r.status}${fault}`,
    });
    if (r.method !== "DELETE" || r.status !== 202) return;
    this.counts.tagDeletes++;
    if (checkpoint !== undefined) {
      this.counts.checkpointTagDeletes++;
      this.goneCheckpointTags.set(`${repo}@${reference}`, checkpoint);
      tags.delete(reference);
      if (!this.deletedCheckpoints.has(checkpoint)) {
        this.violate(
          "e",
          vmName,
          `the operator deleted ${repo}:${CHECKPOINT_TAG_PREFIX}${checkpoint} (${reference}) while CocoonCheckpoint ${checkpoint} is live`,
        );
      }
    }
    if (!namesTag) return;
    const restoredSinceHibernate =
      s.live &&
      (s.liveKind === "wake" || s.liveKind === "restore") &&
      s.lastStart !== undefined &&
      (s.lastHibernate === undefined || s.lastStart > s.lastHibernate);
    // Deleting a tag no VM was ever hibernated into (a stale or foreign tag) loses nothing we track.
    const ok = this.inTeardown(vmName) || this.imageChanged.has(vmName) || restoredSinceHibernate || !s.tag;
    s.tag = false;
    if (!ok) {
      this.violateOutsideTeardown(
        "b",
        vmName,
        `the operator deleted ${repo}:${m[2]} while no VM restored from it runs (live=${s.live}, started as ${s.liveKind ?? "-"})`,
      );
    }
  }

  /**
   * A loss outside teardown. With a teardown grace, it counts only if the VM's set is still not
   * declared in teardown that long after: a test that learns of deletions it did not make (a pool
   * deleting a member) from a watch declares them a little after the operator acted on them.
   */
  private violateOutsideTeardown(invariant: string, vmName: string, message: string): void {
    if (this.teardownGraceMs === 0) {
      this.violate(invariant, vmName, message);
      return;
    }
    this.graced++;
    setTimeout(() => {
      this.graced--;
      if (!this.inTeardown(vmName)) this.violate(invariant, vmName, message);
    }, this.teardownGraceMs);
  }

  /** Resolves once every loss held for the teardown grace has been judged. */
  async settled(): Promise<void> {
    while (this.graced > 0) await new Promise((r) => setTimeout(r, 100));
  }

  /** A violation another checker found, with this timeline's history of the VM (or object) it names. */
  flag(invariant: string, vmName: string, message: string): void {
    this.violate(invariant, vmName, message);
  }

  /** Each violation once: a repeated read or probe would otherwise bury the others. */
  private violate(invariant: string, vmName: string, message: string): void {
    const text = `invariant (${invariant}) violated: ${message}`;
    if (this.reported.has(text)) return;
    this.reported.add(text);
    this.timeline.push({ time: Date.now(), source: "driver", text: `VIOLATION ${text}`, vmName });
    this.violations.push(`${text}\n${this.history(vmName)}`);
    if (this.violations.length === 1) this.rejectFailed(new InvariantViolation(this.violations[0]));
  }

  /** The timeline that led here: everything about this VM, and the driver's notes, oldest first. */
  history(vmName?: string, limit = 80): string {
    const relevant = this.timeline.filter(
      (t) => vmName === undefined || t.vmName === vmName || (t.source === "driver" && t.vmName === undefined),
    );
    const start = relevant[0]?.time ?? 0;
    return relevant
      .slice(-limit)
      .map((t) => `  +${String(t.time - start).padStart(7)} ms ${t.source.padEnd(8)} ${t.text}`)
      .join("\n");
  }
}
