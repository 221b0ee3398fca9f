// An in-memory implementation of our own Client interface for fast reconcile unit tests. It keeps the
// API server semantics the reconcilers depend on, and nothing more:
//   - resourceVersion bumps on every write; metadata.generation starts at 1 and bumps on spec changes
//     and on the first deletionTimestamp;
//   - status is written only through the status subresource, and only status is written there;
//   - JSON merge patch (RFC 7386);
//   - delete with finalizers sets deletionTimestamp; a bound pod is only marked terminating (there is
//     no kubelet) unless gracePeriodSeconds is 0 or it is Failed or Succeeded; finishPodDeletion()
//     plays the kubelet's final delete;
//   - an update of a custom resource must carry metadata.resourceVersion; no finalizer can be added
//     to an object being deleted;
//   - a resourceVersion in a merge patch's metadata, or in delete preconditions, must match;
//   - NotFound / AlreadyExists / Conflict / Invalid as the typed errors of src/controller/errors.ts;
//   - exec (PodExecutor) as KubeExecutor sees it through the API server in front of vk-cocoon: the pod
//     read first (NotFound, not Running), then a scripted guest; a non-zero exit comes back as
//     vk-cocoon's wrapped SSH error, output is bounded the same way, a hang ends at the deadline.
// test/integration/fakeclient-parity.test.ts runs the same assertions on these against the real
// kube-apiserver.
// Every call is recorded, so tests can assert "no writes" or the exact order of writes. The store is
// kept as of every change (write or seed), so a view can serve it as it was N changes ago: the
// lagging informer cache that reconcilers must never trust for an irreversible step.

import type { Pod } from "../../src/apis/core.ts";
import { type CocoonHibernation, type CocoonSet, GROUP } from "../../src/apis/v1/types.ts";
import { type Clock, systemClock } from "../../src/clock.ts";
import { ANN_IP } from "../../src/contract/keys.ts";
import type {
  Client,
  DeleteOptions,
  ListOptions,
  ListResult,
  WriteOptions,
} from "../../src/controller/client.ts";
import { deepCopyJson } from "../../src/controller/deepcopy.ts";
import {
  AlreadyExistsError,
  ApiError,
  ConflictError,
  InvalidError,
  NotFoundError,
} from "../../src/controller/errors.ts";
import {
  BoundedCapture,
  DEFAULT_MAX_OUTPUT_BYTES,
  ExecFailedError,
  type ExecRequest,
  type ExecResult,
  ExecTimeoutError,
  type PodExecutor,
  requireRunning,
} from "../../src/controller/exec.ts";
import { applyMergePatch } from "../../src/controller/mergepatch.ts";
import { COCOONHIBERNATIONS, COCOONSETS, PODS, type ResourceType } from "../../src/controller/resources.ts";
import type { CachedHibernation, CocoonSetView } from "../../src/pass/pass.ts";
import { setVMNames } from "../../src/pass/setvms.ts";
import { sshExecMessage } from "../env/simulator/exec.ts";

export interface RecordedCall {
  verb: "get" | "list" | "create" | "update" | "patch" | "delete";
  resource: string;
  namespace: string;
  name: string;
  body?: unknown;
  subresource?: string;
  /** A dryRun=All write: admitted and answered, nothing stored. */
  dryRun?: true;
}

interface Meta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
}

type StoredObject = { metadata: Meta; spec?: unknown; status?: unknown };

const WRITE_VERBS = new Set(["create", "update", "patch", "delete"]);

export { applyMergePatch };

function deepFreeze<T>(value: T): T {
  if (value === null || typeof value !== "object" || Object.isFrozen(value)) return value;
  Object.freeze(value);
  for (const child of Object.values(value)) deepFreeze(child);
  return value;
}

function invalid(rt: ResourceType, name: string, cause: string): InvalidError {
  return new InvalidError(422, "Invalid", `${rt.kind} "${name}" is invalid: ${cause}`);
}

function selectorMatches(selector: string | undefined, labels: Record<string, string> = {}): boolean {
  if (!selector) return true;
  return selector.split(",").every((term) => {
    const [key, value] = term.split("=");
    if (key === undefined) return true;
    return value === undefined ? key in labels : labels[key] === value;
  });
}

/** What a scripted guest answers one exec with. */
export type FakeExecAnswer =
  | { stdout?: string | Uint8Array; stderr?: string | Uint8Array; exitCode?: number }
  /** vk-cocoon could not run it (no live VM, SSH failure): an InternalError with this message. */
  | { providerError: string }
  /** The command never finishes: the exec ends at its deadline or abort. */
  | { hang: true };

export type FakeExecScript = (request: ExecRequest, pod: Pod) => FakeExecAnswer | Promise<FakeExecAnswer>;

export class FakeClient implements Client, PodExecutor {
  readonly calls: RecordedCall[] = [];
  private readonly objects = new Map<string, StoredObject>();
  /**
   * Every change, oldest first: the key and the object stored under it afterwards (undefined: removed).
   * Stored objects are replaced, never edited, so replaying a prefix rebuilds the store as it was.
   */
  private readonly changes: { key: string; obj: StoredObject | undefined }[] = [];
  /** cached()'s answers by key prefix, each dropped when an object under its prefix changes. */
  private readonly cachedLists = new Map<string, readonly StoredObject[]>();
  private version = 1;
  private uidCounter = 0;
  private injected: { verb: string; resource: string; error: Error }[] = [];
  private lostReplies: { verb: string; resource: string; error: Error }[] = [];
  now: () => string = () => "2026-01-01T00:00:00Z";
  /** The clock an exec's timeoutMs runs on. */
  execClock: Clock = systemClock;
  private execScript: FakeExecScript | undefined;

  /** Puts an object in the store directly (no call recorded), filling the metadata a server fills. */
  seed<T>(rt: ResourceType, obj: T): T {
    return deepCopyJson(this.insert(rt, deepCopyJson(obj) as StoredObject)) as T;
  }

  /**
   * The stored objects of one namespace themselves, uncopied, as an informer's cache hands them out.
   * They are deep-frozen (the store replaces objects, never edits them), so a test whose code under
   * test writes to one fails with a TypeError instead of silently changing the store.
   */
  cached<T>(rt: ResourceType, namespace: string): readonly T[] {
    const prefix = `${rt.plural}/${namespace}/`;
    let items = this.cachedLists.get(prefix);
    if (!items) {
      const found: StoredObject[] = [];
      for (const [key, obj] of this.objects) if (key.startsWith(prefix)) found.push(deepFreeze(obj));
      items = found;
      this.cachedLists.set(prefix, items);
    }
    return [...items] as T[];
  }

  /**
   * The stored object, or undefined; never recorded as a call. `changesAgo` reads the store as it was
   * that many changes (writes or seeds) ago, or as first seeded when there were fewer.
   */
  peek<T>(rt: ResourceType, namespace: string, name: string, changesAgo = 0): T | undefined {
    const obj = this.storeAsOf(changesAgo).get(this.key(rt, namespace, name));
    return obj ? (deepCopyJson(obj) as T) : undefined;
  }

  /** Every stored object of the resource (in the namespace), as of `changesAgo` (see peek). */
  all<T>(rt: ResourceType, namespace?: string, changesAgo = 0): T[] {
    const prefix = `${rt.plural}/${namespace ?? ""}`;
    return [...this.storeAsOf(changesAgo).entries()]
      .filter(([key]) =>
        namespace === undefined ? key.startsWith(`${rt.plural}/`) : key.startsWith(`${prefix}/`),
      )
      .map(([, obj]) => deepCopyJson(obj) as T);
  }

  /** Every change so far, oldest first (see `changes`), for a view that keeps an index as a watch does. */
  get storeChanges(): readonly { readonly key: string; readonly obj: StoredObject | undefined }[] {
    return this.changes;
  }

  /** Runs `change` (seeds or writes) and returns how many times it changed the store. */
  changesDuring(change: () => void): number {
    const before = this.changes.length;
    change();
    return this.changes.length - before;
  }

  /** The next call with this verb on this resource (plural, or "plural/status") fails with error. */
  failNext(verb: RecordedCall["verb"], resource: string, error: Error): void {
    this.injected.push({ verb, resource, error });
  }

  /**
   * The next update or patch with this verb on this resource (plural, or "plural/status") is applied,
   * and then fails with error: the server did the write, the client saw it fail (a lost reply).
   */
  failAfterNext(verb: "update" | "patch", resource: string, error: Error): void {
    this.lostReplies.push({ verb, resource, error });
  }

  writes(): RecordedCall[] {
    return this.calls.filter((c) => WRITE_VERBS.has(c.verb));
  }

  clearCalls(): void {
    this.calls.length = 0;
  }

  /** Plays the kubelet: removes a terminating pod for good. */
  finishPodDeletion(namespace: string, name: string): void {
    this.remove(this.key(PODS, namespace, name));
  }

  /** Scripts the guests' answers to exec; without a script every exec throws. */
  onExec(script: FakeExecScript): void {
    this.execScript = script;
  }

  /**
   * KubeExecutor's exec against this store: the pod read (recorded as a get), the exec recorded as
   * `create pods/exec` with the command and stdin as its body, then the script's answer as the API
   * server relays vk-cocoon's (see the header).
   */
  async exec(request: ExecRequest): Promise<ExecResult> {
    const pod = await this.get<Pod>(PODS, request.namespace, request.pod);
    requireRunning(pod, `${request.namespace}/${request.pod}`);
    this.record({
      verb: "create",
      resource: PODS.plural,
      subresource: "exec",
      namespace: request.namespace,
      name: request.pod,
      body: {
        command: [...request.command],
        ...(request.stdin ? { stdin: Buffer.from(request.stdin) } : {}),
      },
    });
    if (this.execScript === undefined) throw new Error(`FakeClient: no exec scripted (${request.pod})`);
    const answer = await this.execScript(request, pod);
    const max = request.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    const stdout = new BoundedCapture(max);
    const stderr = new BoundedCapture(max);
    if ("hang" in answer) {
      await new Promise<void>((resolve) => {
        request.signal?.addEventListener("abort", () => resolve(), { once: true });
        if (request.signal?.aborted) resolve();
        if (request.timeoutMs !== undefined) void this.execClock.sleep(request.timeoutMs).then(resolve);
      });
      throw new ExecTimeoutError(
        `exec in ${request.namespace}/${request.pod} ended`,
        Buffer.alloc(0),
        Buffer.alloc(0),
      );
    }
    const ip = pod.metadata.annotations?.[ANN_IP] ?? "";
    const providerError = (message: string) =>
      new ExecFailedError(
        "InternalError",
        500,
        `Internal error occurred: Internal error occurred: error executing command in container: ${message}`,
        { stdout: stdout.bytes(), stderr: stderr.bytes() },
      );
    if ("providerError" in answer) throw providerError(answer.providerError);
    stdout.write(Buffer.from(answer.stdout ?? ""));
    stderr.write(Buffer.from(answer.stderr ?? ""));
    const exitCode = answer.exitCode ?? 0;
    if (exitCode !== 0) {
      throw providerError(
        sshExecMessage(request.command[0] ?? "", ip, `Process exited with status ${exitCode}`),
      );
    }
    return {
      exitCode: 0,
      stdout: stdout.bytes(),
      stderr: stderr.bytes(),
      stdoutTruncated: stdout.truncated,
      stderrTruncated: stderr.truncated,
      transport: "websocket",
    };
  }

  async get<T>(rt: ResourceType, namespace: string, name: string): Promise<T> {
    this.record({ verb: "get", resource: rt.plural, namespace, name });
    return deepCopyJson(this.mustGet(rt, namespace, name)) as T;
  }

  async list<T>(
    rt: ResourceType,
    namespace: string | undefined,
    opts?: ListOptions<T>,
  ): Promise<ListResult<T>> {
    this.record({ verb: "list", resource: rt.plural, namespace: namespace ?? "", name: "" });
    const items = this.all<StoredObject>(rt, namespace).filter((o) =>
      selectorMatches(opts?.labelSelector, o.metadata.labels),
    ) as T[];
    // The copies are the caller's: apply its per-item transform as KubeClient does while decoding.
    return {
      items: opts?.transform ? items.map((item) => opts.transform?.(item) ?? item) : items,
      resourceVersion: String(this.version),
    };
  }

  async create<T>(rt: ResourceType, namespace: string, obj: T, opts?: WriteOptions): Promise<T> {
    const copy = deepCopyJson(obj) as StoredObject;
    const name = copy.metadata.name ?? "";
    this.record({
      verb: "create",
      resource: rt.plural,
      namespace,
      name,
      body: obj,
      ...(opts?.dryRun ? { dryRun: true } : {}),
    });
    const key = this.key(rt, namespace, name);
    if (this.objects.has(key)) {
      throw new AlreadyExistsError(409, "AlreadyExists", `${rt.plural} "${name}" already exists`);
    }
    copy.metadata.namespace = namespace;
    if (opts?.dryRun) return { ...copy, metadata: { ...copy.metadata, generation: 1 } } as T;
    return deepCopyJson(this.insert(rt, copy)) as T;
  }

  async update<T>(
    rt: ResourceType,
    obj: T & { metadata: { name?: string; namespace?: string } },
  ): Promise<T> {
    const incoming = deepCopyJson(obj) as StoredObject;
    const namespace = incoming.metadata.namespace ?? "";
    const name = incoming.metadata.name ?? "";
    this.record({ verb: "update", resource: rt.plural, namespace, name, body: obj });
    const current = this.mustGet(rt, namespace, name);
    if (!incoming.metadata.resourceVersion && rt.group === GROUP) {
      // Custom resources do not allow unconditional updates.
      throw invalid(
        rt,
        name,
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
      );
    }
    if (
      incoming.metadata.resourceVersion &&
      incoming.metadata.resourceVersion !== current.metadata.resourceVersion
    ) {
      throw new ConflictError(409, "Conflict", `the object ${name} has been modified`);
    }
    // The main resource ignores status, as with a status subresource.
    incoming.status = current.status;
    const stored = this.store(rt, current, incoming) as T;
    this.loseReply("update", rt.plural);
    return stored;
  }

  async patch<T>(
    rt: ResourceType,
    namespace: string,
    name: string,
    mergePatch: unknown,
    opts?: { subresource?: "status" } & WriteOptions,
  ): Promise<T> {
    this.record({
      verb: "patch",
      resource: rt.plural,
      namespace,
      name,
      body: mergePatch,
      ...(opts?.subresource ? { subresource: opts.subresource } : {}),
      ...(opts?.dryRun ? { dryRun: true } : {}),
    });
    const current = this.mustGet(rt, namespace, name);
    const meta = (mergePatch as { metadata?: { resourceVersion?: string; uid?: string } } | null)?.metadata;
    const expected = meta?.resourceVersion;
    if (expected !== undefined && expected !== current.metadata.resourceVersion) {
      throw new ConflictError(409, "Conflict", `the object ${name} has been modified`);
    }
    // A uid in the patch that is not the object's is refused: metadata.uid is immutable.
    if (meta?.uid !== undefined && meta.uid !== current.metadata.uid) {
      throw invalid(rt, name, `metadata.uid: Invalid value: "${meta.uid}": field is immutable`);
    }
    const patched = applyMergePatch(current, mergePatch) as StoredObject;
    if (opts?.dryRun) return { ...patched, status: current.status } as T;
    if (opts?.subresource === "status") {
      const stored = this.store(rt, current, { ...deepCopyJson(current), status: patched.status }) as T;
      this.loseReply("patch", `${rt.plural}/status`);
      return stored;
    }
    patched.status = current.status;
    const stored = this.store(rt, current, patched) as T;
    this.loseReply("patch", rt.plural);
    return stored;
  }

  async delete(rt: ResourceType, namespace: string, name: string, opts?: DeleteOptions): Promise<void> {
    this.record({ verb: "delete", resource: rt.plural, namespace, name });
    const key = this.key(rt, namespace, name);
    const current = this.mustGet(rt, namespace, name);
    if (opts?.preconditions?.uid && opts.preconditions.uid !== current.metadata.uid) {
      throw new ConflictError(409, "Conflict", `precondition failed: uid ${opts.preconditions.uid}`);
    }
    const expectedVersion = opts?.preconditions?.resourceVersion;
    if (expectedVersion && expectedVersion !== current.metadata.resourceVersion) {
      throw new ConflictError(409, "Conflict", `precondition failed: resourceVersion ${expectedVersion}`);
    }
    const bound = rt === PODS && Boolean((current.spec as { nodeName?: string } | undefined)?.nodeName);
    const phase = (current.status as { phase?: string } | undefined)?.phase;
    // Only a pod a kubelet still runs waits for it; a terminal one has nothing left to stop.
    const graceful = bound && phase !== "Failed" && phase !== "Succeeded" && opts?.gracePeriodSeconds !== 0;
    if ((current.metadata.finalizers?.length ?? 0) > 0 || graceful) {
      if (!current.metadata.deletionTimestamp) {
        // A new stored object, never an edit of one: cached() hands stored objects out uncopied.
        const generation = current.metadata.generation ?? 0;
        const metadata = {
          ...current.metadata,
          deletionTimestamp: this.now(),
          resourceVersion: String(++this.version),
          ...(generation > 0 ? { generation: generation + 1 } : {}),
        };
        this.put(key, { ...current, metadata });
      }
      return;
    }
    this.remove(key);
  }

  /** Stores obj itself (a private copy), filling the metadata a server fills. */
  private insert(rt: ResourceType, obj: StoredObject): StoredObject {
    obj.metadata.uid ??= `uid-${++this.uidCounter}`;
    obj.metadata.resourceVersion = String(++this.version);
    obj.metadata.generation ??= 1;
    obj.metadata.creationTimestamp ??= this.now();
    this.put(this.key(rt, obj.metadata.namespace ?? "", obj.metadata.name ?? ""), obj);
    return obj;
  }

  private store(rt: ResourceType, current: StoredObject, next: StoredObject): StoredObject {
    if (current.metadata.deletionTimestamp) {
      const added = (next.metadata.finalizers ?? []).filter((f) => !current.metadata.finalizers?.includes(f));
      if (added.length > 0) {
        throw invalid(
          rt,
          current.metadata.name ?? "",
          `metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers ${JSON.stringify(added)}`,
        );
      }
    }
    // A merge patch that leaves metadata alone shares current's: copy it before writing to it.
    next.metadata = { ...next.metadata };
    next.metadata.uid = current.metadata.uid;
    next.metadata.creationTimestamp = current.metadata.creationTimestamp;
    next.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
    next.metadata.resourceVersion = String(++this.version);
    const specChanged = JSON.stringify(next.spec) !== JSON.stringify(current.spec);
    next.metadata.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    const key = this.key(rt, current.metadata.namespace ?? "", current.metadata.name ?? "");
    if (next.metadata.deletionTimestamp && (next.metadata.finalizers?.length ?? 0) === 0 && rt !== PODS) {
      this.remove(key);
    } else {
      this.put(key, next);
    }
    return deepCopyJson(next);
  }

  private put(key: string, obj: StoredObject): void {
    this.objects.set(key, obj);
    this.recordChange(key, obj);
  }

  private remove(key: string): void {
    this.objects.delete(key);
    this.recordChange(key, undefined);
  }

  private recordChange(key: string, obj: StoredObject | undefined): void {
    this.changes.push({ key, obj });
    for (const prefix of this.cachedLists.keys()) if (key.startsWith(prefix)) this.cachedLists.delete(prefix);
  }

  private storeAsOf(changesAgo: number): ReadonlyMap<string, StoredObject> {
    if (changesAgo <= 0) return this.objects;
    const past = new Map<string, StoredObject>();
    const count = Math.max(0, this.changes.length - changesAgo);
    for (let i = 0; i < count; i++) {
      const { key, obj } = this.changes[i] as { key: string; obj: StoredObject | undefined };
      if (obj === undefined) past.delete(key);
      else past.set(key, obj);
    }
    return past;
  }

  private mustGet(rt: ResourceType, namespace: string, name: string): StoredObject {
    const obj = this.objects.get(this.key(rt, namespace, name));
    if (!obj) throw new NotFoundError(404, "NotFound", `${rt.plural} "${name}" not found`);
    return obj;
  }

  private record(call: RecordedCall): void {
    this.calls.push(call);
    const resource = call.subresource ? `${call.resource}/${call.subresource}` : call.resource;
    const index = this.injected.findIndex((i) => i.verb === call.verb && i.resource === resource);
    if (index >= 0) {
      const [injected] = this.injected.splice(index, 1);
      throw injected?.error ?? new ApiError(500, "InternalError", "injected");
    }
  }

  /** Throws the lost reply queued for this verb and resource, if any (the write is already applied). */
  private loseReply(verb: string, resource: string): void {
    const index = this.lostReplies.findIndex((i) => i.verb === verb && i.resource === resource);
    if (index < 0) return;
    const [lost] = this.lostReplies.splice(index, 1);
    throw lost?.error;
  }

  private key(rt: ResourceType, namespace: string, name: string): string {
    return `${rt.plural}/${namespace}/${name}`;
  }
}

/** The cache view of a FakeClient's store, counting CocoonHibernation lists. */
export class FakeView implements CocoonSetView {
  hibernationLists = 0;
  /** Serve the set and its pods as they were this many store changes ago (a lagging informer). */
  lag = 0;

  /**
   * Runs `change` (seeds standing for other writers: vk-cocoon, the kubelet, a user) while this view
   * goes on serving the set and pods as before it: the cache lags by the changes made, and by as many
   * writes as the reconciler makes later.
   */
  lagBehind(change: () => void): void {
    this.lag += this.client.changesDuring(change);
  }
  private readonly client: FakeClient;

  constructor(client: FakeClient) {
    this.client = client;
  }

  getCocoonSet(namespace: string, name: string): CocoonSet | undefined {
    return this.client.peek<CocoonSet>(COCOONSETS, namespace, name, this.lag);
  }

  listSetPods(namespace: string, setName: string): Pod[] {
    return this.client
      .all<Pod>(PODS, namespace, this.lag)
      .filter((p) => p.metadata.labels?.["cocoonset.cocoonstack.io/name"] === setName);
  }

  /** The stored objects uncopied, as the operator's view hands out the cache's. */
  listHibernations(namespace: string): readonly CachedHibernation[] {
    this.hibernationLists++;
    return this.client.cached<CocoonHibernation>(COCOONHIBERNATIONS, namespace);
  }

  /** Every stored set, of any namespace, that answers for `vm`, as the operator's index files them. */
  listSetsNamingVM(vm: string): readonly CocoonSet[] {
    return this.client
      .all<CocoonSet>(COCOONSETS, undefined, this.lag)
      .filter((cs) => setVMNames(cs).includes(vm));
  }
}
