// CocoonClient: the SDK's entry. It connects as kubectl does (connect.ts), claims groups from pools,
// branches checkpoints into new groups, opens and creates groups; every wait is the SDK's list+watch.

import { API_VERSION, type CocoonSet, type CocoonSetSpec, KIND_COCOONSET } from "../apis/v1/types.ts";
import { type Clock, systemClock } from "../clock.ts";
import { type Client, KubeClient, type WatchClient } from "../controller/client.ts";
import { isAlreadyExists } from "../controller/errors.ts";
import { KubeExecutor, type PodExecutor } from "../controller/exec.ts";
import { COCOONSETS } from "../controller/resources.ts";
import { generatedName } from "../pool/names.ts";
import { branchFrom } from "./branch.ts";
import { claimFrom } from "./claims.ts";
import { connect } from "./connect.ts";
import { CocoonError } from "./errors.ts";
import { WarningWatch } from "./events.ts";
import { AgentGroup, type OperationOptions, readMembers, waitOptions } from "./group.ts";
import { setWait } from "./setstate.ts";
import { type Session, waitFor, watchQueries } from "./wait.ts";

export interface ConnectOptions {
  /** Default: the context's namespace, else "default". */
  namespace?: string;
  /** A kubeconfig file; default KUBECONFIG, else ~/.kube/config, else in-cluster. */
  kubeconfig?: string;
  /** A context other than the kubeconfig's current one. */
  context?: string;
}

/** What fromClient can be given besides the client: the seams tests use. */
export interface ClientSeams {
  /** Runs exec (default: KubeExecutor over a KubeClient, or the client itself when it can exec). */
  executor?: PodExecutor;
  /** The waits' list+watch (default: the client, when it watches). */
  watcher?: WatchClient;
  clock?: Clock;
}

export interface ClaimOptions extends OperationOptions {
  /** The claim's name (default <pool>-<5 characters>). */
  name?: string;
  /** Handed to the bound set's PostClaim guest hooks on their stdin (docs/guest.md). */
  parameters?: Record<string, string>;
  /** Annotations on the claim, passed to the set at bind time (idle and expiry policies). */
  annotations?: Record<string, string>;
}

export interface BranchOptions extends OperationOptions {
  count: number;
  /** The new sets are named <namePrefix>-<5 characters> (default: the checkpoint's name). */
  namePrefix?: string;
  /** Sub-agents of each new set (default: the source set's). */
  replicas?: number;
}

export interface CreateSpec {
  name: string;
  spec: CocoonSetSpec;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
}

export class CocoonClient {
  readonly namespace: string;
  private readonly session: Session;
  private readonly executor: PodExecutor;

  private constructor(session: Session, executor: PodExecutor) {
    this.session = session;
    this.executor = executor;
    this.namespace = session.namespace;
  }

  /** Connects by kubectl's rules: kubeconfig (or KUBECONFIG, ~/.kube/config), context, in-cluster. */
  static async connect(opts: ConnectOptions = {}): Promise<CocoonClient> {
    const { client, namespace } = connect(opts, process.env);
    return CocoonClient.fromClient(client, namespace);
  }

  /** Over an existing client (this project's KubeClient, or a test's). */
  static fromClient(client: Client, namespace: string, seams: ClientSeams = {}): CocoonClient {
    const watcher = seams.watcher ?? (isWatchClient(client) ? client : undefined);
    if (!watcher)
      throw new CocoonError("NoWatch", "the client cannot watch, and every wait of the SDK is a watch");
    const executor =
      seams.executor ??
      (client instanceof KubeClient ? new KubeExecutor(client) : isExecutor(client) ? client : undefined);
    if (!executor) throw new CocoonError("NoExec", "the client cannot exec: give fromClient an executor");
    const clock = seams.clock ?? systemClock;
    return new CocoonClient({ client, namespace, clock, observe: watchQueries(watcher, clock) }, executor);
  }

  /**
   * Claims a member of `pool`: creates a CocoonClaim and resolves once it is Ready (its set Running,
   * guest hooks done) with the bound group.
   */
  async claim(pool: string, opts: ClaimOptions = {}): Promise<AgentGroup> {
    const name = opts.name ?? generatedName(pool);
    const claim = await claimFrom(this.session, pool, name, {
      ...(opts.annotations ? { annotations: opts.annotations } : {}),
      ...(opts.parameters ? { parameters: opts.parameters } : {}),
      until: "ready",
      wait: waitOptions(opts),
    });
    const set = claim.status?.cocoonSetRef?.name ?? "";
    return this.open(set, name);
  }

  /** `count` new groups from the Ready checkpoint, each resolved once Running. */
  async branch(checkpoint: string, opts: BranchOptions): Promise<AgentGroup[]> {
    // The first fork to fail ends the others' waits: their result no longer matters.
    const stop = new AbortController();
    const { signal: callerSignal, ...rest } = opts;
    const forward = () => stop.abort(callerSignal?.reason);
    if (callerSignal?.aborted) forward();
    callerSignal?.addEventListener("abort", forward, { once: true });
    try {
      const wait = waitOptions({ ...rest, signal: stop.signal });
      const names = Array.from({ length: opts.count }, () => generatedName(opts.namePrefix ?? checkpoint));
      await Promise.all(
        names.map((name) =>
          branchFrom(this.session, checkpoint, name, {
            wait,
            ...(opts.replicas !== undefined ? { replicas: opts.replicas } : {}),
          }).catch((err: unknown) => {
            stop.abort(err);
            throw err;
          }),
        ),
      );
      return await Promise.all(names.map((name) => this.open(name)));
    } finally {
      callerSignal?.removeEventListener("abort", forward);
    }
  }

  /** An existing set (CocoonNotFoundError when there is none). */
  group(name: string): Promise<AgentGroup> {
    return this.open(name);
  }

  /** Creates a set and resolves once it is Running. */
  async create(set: CreateSpec, opts: OperationOptions = {}): Promise<AgentGroup> {
    const wait = waitOptions(opts);
    let cs: CocoonSet;
    try {
      cs = await this.session.client.create<CocoonSet>(COCOONSETS, this.namespace, {
        apiVersion: API_VERSION,
        kind: KIND_COCOONSET,
        metadata: {
          name: set.name,
          namespace: this.namespace,
          ...(set.annotations ? { annotations: set.annotations } : {}),
          ...(set.labels ? { labels: set.labels } : {}),
        },
        spec: set.spec,
      });
    } catch (err) {
      if (isAlreadyExists(err)) {
        throw new CocoonError(
          "AlreadyExists",
          `cocoonset "${set.name}" already exists in namespace "${this.namespace}"`,
        );
      }
      throw err;
    }
    const warnings = WarningWatch.ofCreated(this.session, KIND_COCOONSET, cs);
    await waitFor(
      this.session,
      setWait(set.name, cs.metadata.generation ?? 1, { kind: "ready" }, warnings),
      wait,
    );
    return this.open(set.name);
  }

  private async open(name: string, claim?: string): Promise<AgentGroup> {
    const { members } = await readMembers(this.session, name);
    return new AgentGroup(this.session, this.executor, name, members, claim);
  }
}

function isWatchClient(client: Client): client is Client & WatchClient {
  return typeof (client as Partial<WatchClient>).watch === "function";
}

function isExecutor(client: Client): client is Client & PodExecutor {
  return typeof (client as Partial<PodExecutor>).exec === "function";
}
