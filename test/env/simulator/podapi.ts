// The pod writes vk-cocoon and virtual-kubelet make: annotation patches with a uid precondition,
// /status patches, Events, and the final grace-0 delete.

import type { Pod, PodStatus } from "../../../src/apis/core.ts";
import type { Clock } from "../../../src/clock.ts";
import {
  type KubeClient,
  KubeError,
  type KubeResponse,
  MERGE_PATCH,
  ok,
  STRATEGIC_MERGE_PATCH,
} from "./kube.ts";

const PATCH_ATTEMPTS = 3;
const PATCH_RETRY_MS = 500;

export type StatusPatch = { [K in keyof PodStatus]?: PodStatus[K] | null } & Record<string, unknown>;

export class PodApi {
  private readonly kube: KubeClient;
  private readonly clock: Clock;
  private readonly node: string;

  constructor(kube: KubeClient, clock: Clock, node: string) {
    this.kube = kube;
    this.clock = clock;
    this.node = node;
  }

  /**
   * One strategic-merge patch of annotations (null deletes a key). metadata.uid makes the API server
   * reject a patch aimed at a pod that was replaced under the same name.
   */
  async patchAnnotations(
    pod: Pod,
    annotations: Record<string, string | null>,
    signal: AbortSignal,
  ): Promise<void> {
    await this.withRetries(`patch annotations of ${podKey(pod)}`, signal, () =>
      this.kube.request("PATCH", podPath(pod), {
        body: { metadata: { uid: pod.metadata.uid, annotations } },
        contentType: STRATEGIC_MERGE_PATCH,
      }),
    );
  }

  /** A merge patch of /status (as virtual-kubelet's UpdateStatus after a provider notify). */
  async patchStatus(pod: Pod, status: StatusPatch, signal: AbortSignal): Promise<void> {
    await this.withRetries(`patch status of ${podKey(pod)}`, signal, () =>
      this.kube.request("PATCH", `${podPath(pod)}/status`, {
        body: { metadata: { uid: pod.metadata.uid }, status },
        contentType: MERGE_PATCH,
      }),
    );
  }

  /** Best effort, as event recording is: a lost Event never fails an operation. */
  async event(pod: Pod, type: "Normal" | "Warning", reason: string, message: string): Promise<void> {
    const now = new Date(this.clock.now()).toISOString();
    const namespace = pod.metadata.namespace ?? "default";
    await this.kube
      .request("POST", `/api/v1/namespaces/${namespace}/events`, {
        body: {
          apiVersion: "v1",
          kind: "Event",
          metadata: { generateName: `${pod.metadata.name}.`, namespace },
          involvedObject: {
            apiVersion: "v1",
            kind: "Pod",
            namespace,
            name: pod.metadata.name,
            uid: pod.metadata.uid,
          },
          type,
          reason,
          message,
          source: { component: "vk-cocoon", host: this.node },
          reportingComponent: "vk-cocoon",
          reportingInstance: this.node,
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      })
      .catch(() => undefined);
  }

  /**
   * vk-cocoon's eviction delete (deletePodWithRetry in provider/cocoon/provider.go): default options,
   * so the pod's own grace period applies, with a uid precondition. Gone (404) counts as deleted;
   * false means the pod was replaced under its name (409) and is left alone.
   */
  async evictDelete(pod: Pod, signal: AbortSignal): Promise<boolean> {
    try {
      await this.withRetries(`evict ${podKey(pod)}`, signal, () =>
        this.kube.request("DELETE", podPath(pod), {
          body: { apiVersion: "v1", kind: "DeleteOptions", preconditions: { uid: pod.metadata.uid } },
          signal,
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof KubeError && err.status === 404) return true;
      if (err instanceof KubeError && err.status === 409) return false;
      throw err;
    }
  }

  /** The kubelet's final delete: grace 0 with a uid precondition. Already gone is success. */
  async finalDelete(pod: Pod, signal: AbortSignal): Promise<void> {
    const res = await this.kube.request("DELETE", podPath(pod), {
      body: {
        apiVersion: "v1",
        kind: "DeleteOptions",
        gracePeriodSeconds: 0,
        preconditions: { uid: pod.metadata.uid },
      },
      signal,
    });
    if (!ok(res) && res.status !== 404 && res.status !== 409)
      throw new KubeError(`delete ${podKey(pod)}`, res);
  }

  private async withRetries(
    what: string,
    signal: AbortSignal,
    send: () => Promise<KubeResponse>,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      let failure: Error;
      try {
        const res = await send();
        if (ok(res)) return;
        failure = new KubeError(what, res);
        // 404 (pod gone) and 409/422 (uid precondition: replaced pod) will not heal by retrying.
        if (res.status === 404 || res.status === 409 || res.status === 422) throw failure;
      } catch (err) {
        if (err instanceof KubeError) throw err;
        failure = err as Error;
      }
      if (attempt >= PATCH_ATTEMPTS) throw failure;
      await this.clock.sleep(PATCH_RETRY_MS, signal);
    }
  }
}

export function podKey(pod: Pod): string {
  return `${pod.metadata.namespace}/${pod.metadata.name}`;
}

function podPath(pod: Pod): string {
  return `/api/v1/namespaces/${pod.metadata.namespace}/pods/${pod.metadata.name}`;
}
