// AgentGroup: one CocoonSet as a program uses it, by member name ("main", "subagent-<slot>", a
// toolbox's name) rather than by pod, with each state change awaited through the SDK's watches.

import type { Pod } from "../apis/core.ts";
import type { CocoonSet } from "../apis/v1/types.ts";
import type { CocoonCheckpoint } from "../apis/v1alpha1/types.ts";
import { ANN_IP, LABEL_COCOONSET, ROLE_MAIN, ROLE_TOOLBOX } from "../contract/keys.ts";
import { isNotFound } from "../controller/errors.ts";
import type { PodExecutor } from "../controller/exec.ts";
import { COCOONSETS, PODS } from "../controller/resources.ts";
import { ANN_LAST_ACTIVITY } from "../idle/policy.ts";
import { formatRFC3339 } from "../rfc3339.ts";
import { takeCheckpoint } from "./checkpoints.ts";
import { goneWait, releaseClaim } from "./claims.ts";
import { abortReason, CocoonError } from "./errors.ts";
import {
  type ExecOptions,
  type ExecResult,
  exec,
  type ReadFileOptions,
  readFile,
  type WriteFileOptions,
  writeFile,
} from "./files.ts";
import { restoreTo } from "./restores.ts";
import { changeSet, membersOf, type SetMember, setNotFound, setWait } from "./setstate.ts";
import { type Session, type WaitOptions, waitFor } from "./wait.ts";

export interface Member {
  /** "main" for slot 0, "subagent-<slot>" for a sub-agent, the toolbox's name for a toolbox. */
  name: string;
  role: "main" | "subagent" | "toolbox";
  slot?: number;
  toolbox?: string;
  pod: string;
  /** The VM's address ("" until it has one). */
  ip: string;
  /** The node the pod runs on ("" until scheduled). */
  node: string;
  vmName: string;
}

/** Every operation that waits takes these. */
export interface OperationOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
  onProgress?: (text: string) => void;
}

/** The public Member of a set member as the judges see it. */
export function publicMember(m: SetMember): Member {
  const pod = m.pod;
  const common = {
    pod: m.podName,
    ip: pod?.metadata.annotations?.[ANN_IP] || pod?.status?.podIP || "",
    node: pod?.spec.nodeName ?? "",
    vmName: m.vmName,
  };
  if (m.role === ROLE_TOOLBOX) return { name: m.slot, role: "toolbox", toolbox: m.slot, ...common };
  const slot = Number(m.slot);
  if (m.role === ROLE_MAIN || slot === 0) return { name: "main", role: "main", slot: 0, ...common };
  return { name: `subagent-${slot}`, role: "subagent", slot, ...common };
}

/** The set's members, read now. */
export async function readMembers(
  session: Session,
  name: string,
): Promise<{ cs: CocoonSet; members: Member[] }> {
  let cs: CocoonSet;
  try {
    cs = await session.client.get<CocoonSet>(COCOONSETS, session.namespace, name);
  } catch (err) {
    if (isNotFound(err)) throw setNotFound(session, name);
    throw err;
  }
  const { items } = await session.client.list<Pod>(PODS, session.namespace, {
    labelSelector: `${LABEL_COCOONSET}=${name}`,
  });
  const pods = items.filter((p) => !p.metadata.deletionTimestamp);
  return { cs, members: membersOf(cs, pods).map(publicMember) };
}

/** The wait options of an operation; an operation whose signal is already aborted starts nothing. */
export function waitOptions(opts: OperationOptions = {}): WaitOptions {
  if (opts.signal?.aborted) throw abortReason(opts.signal);
  return {
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.signal ? { signal: opts.signal } : {}),
    ...(opts.onProgress ? { onProgress: opts.onProgress } : {}),
  };
}

export class AgentGroup {
  readonly name: string;
  readonly namespace: string;
  /** The CocoonClaim that holds the set, when it was claimed from a pool. */
  readonly claim: string | undefined;
  /** As of the last read (construction or refresh). */
  members: Member[];
  private readonly session: Session;
  private readonly executor: PodExecutor;

  constructor(session: Session, executor: PodExecutor, name: string, members: Member[], claim?: string) {
    this.session = session;
    this.executor = executor;
    this.name = name;
    this.namespace = session.namespace;
    this.members = members;
    this.claim = claim;
  }

  /** Re-reads the set and its pods. */
  async refresh(): Promise<Member[]> {
    this.members = (await readMembers(this.session, this.name)).members;
    return this.members;
  }

  /** The member by Member, name ("main", "subagent-2", a toolbox) or slot number. */
  member(which: Member | string | number): Member {
    const found =
      typeof which === "number"
        ? this.members.find((m) => m.role !== "toolbox" && m.slot === which)
        : typeof which === "string"
          ? this.members.find((m) => m.name === which)
          : this.members.find((m) => m.pod === which.pod);
    if (!found) {
      const named = typeof which === "object" ? which.name : String(which);
      throw new CocoonError(
        "NoSuchMember",
        `cocoonset "${this.name}" has no member ${named} (members: ${this.members.map((m) => m.name).join(", ")})`,
      );
    }
    return found;
  }

  /** Runs argv in the member's VM; a non-zero exit is the result's exitCode, not an error. */
  exec(which: Member | string | number, argv: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    return exec(this.executor, this.namespace, this.member(which).pod, argv, opts);
  }

  writeFile(
    which: Member | string | number,
    path: string,
    data: string | Uint8Array,
    opts: WriteFileOptions = {},
  ): Promise<void> {
    return writeFile(this.executor, this.namespace, this.member(which).pod, path, data, opts);
  }

  readFile(which: Member | string | number, path: string, opts: ReadFileOptions = {}): Promise<Uint8Array> {
    return readFile(this.executor, this.namespace, this.member(which).pod, path, opts);
  }

  /** spec.suspend=true; resolves when the set is Suspended at the write's generation. */
  async suspend(opts: OperationOptions = {}): Promise<void> {
    await changeSet(
      this.session,
      this.name,
      { spec: { suspend: true } },
      { kind: "suspended" },
      waitOptions(opts),
    );
  }

  /** spec.suspend=false; resolves when the set is Running (Ready) at the write's generation. */
  async resume(opts: OperationOptions = {}): Promise<void> {
    await changeSet(
      this.session,
      this.name,
      { spec: { suspend: false } },
      { kind: "ready" },
      waitOptions(opts),
    );
    await this.refresh();
  }

  /** Stamps the set's last-activity annotation now, postponing an idle suspend. */
  async touch(): Promise<void> {
    try {
      await this.session.client.patch(COCOONSETS, this.namespace, this.name, {
        metadata: { annotations: { [ANN_LAST_ACTIVITY]: formatRFC3339(this.session.clock.now()) } },
      });
    } catch (err) {
      if (isNotFound(err)) throw setNotFound(this.session, this.name);
      throw err;
    }
  }

  /**
   * Checkpoints the set as `name`: a running set is suspended for the copy and resumed after it;
   * resolves when the CocoonCheckpoint is Ready (and a resumed set Running).
   */
  async checkpoint(name: string, opts: OperationOptions = {}): Promise<CocoonCheckpoint> {
    const wait = waitOptions(opts);
    const ck = await takeCheckpoint(this.session, this.name, name, {
      wait,
      awaitSuspended: true,
      resumeWait: wait,
    });
    await this.refresh();
    return ck;
  }

  /** Rolls the set back to `checkpoint`; resolves when Restored and, unless suspended, Running. */
  async restore(checkpoint: string, opts: OperationOptions & { name?: string } = {}): Promise<void> {
    const wait = waitOptions(opts);
    await restoreTo(this.session, this.name, checkpoint, { wait, ...(opts.name ? { name: opts.name } : {}) });
    const { cs } = await readMembers(this.session, this.name);
    if (cs.spec.suspend !== true) {
      await waitFor(this.session, setWait(this.name, cs.metadata.generation ?? 0, { kind: "ready" }), wait);
    }
    await this.refresh();
  }

  /** Deletes the claim (a claimed group) or the set; resolves when the set is gone. */
  async release(opts: OperationOptions = {}): Promise<void> {
    const wait = waitOptions(opts);
    if (this.claim) {
      await releaseClaim(this.session, this.claim, wait);
      return;
    }
    try {
      await this.session.client.delete(COCOONSETS, this.namespace, this.name);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
    await waitFor(this.session, goneWait(undefined, this.name), wait);
  }
}
