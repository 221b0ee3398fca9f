// hibernate POD / wake POD: one CocoonHibernation per pod, created on first use (named after the
// pod) and flipped afterwards, and the --wait goal of both, judged at the CR's new generation.

import type { Pod } from "../apis/core.ts";
import {
  API_VERSION,
  type CocoonHibernation,
  type HibernationDesire,
  KIND_COCOONHIBERNATION,
} from "../apis/v1/types.ts";
import { ANN_VM_NAME } from "../contract/keys.ts";
import { readLifecycleState } from "../contract/lifecycle.ts";
import { vmNameOf } from "../contract/pod.ts";
import { COCOONHIBERNATIONS, PODS } from "../controller/resources.ts";
import { WarningWatch } from "../sdk/events.ts";
import { type Verdict, waitFor } from "../sdk/wait.ts";
import { getPod, hibernations } from "./cluster.ts";
import type { CommandContext } from "./command.ts";
import { PluginError } from "./errors.ts";
import { announce, formatStructured } from "./output.ts";
import { pluginSession, pluginWait } from "./wait.ts";

const DONE_PHASE: Record<HibernationDesire, string> = { Hibernate: "Hibernated", Wake: "Active" };

/** Refuses a pod vk-cocoon does not run a VM for: the hibernation reconciler could do nothing with it. */
export async function cocoonPod(ctx: CommandContext, name: string): Promise<Pod> {
  const pod = await getPod(ctx, name);
  if (vmNameOf(pod) === "") {
    throw new PluginError(
      `pod "${name}" is not managed by vk-cocoon: it has no ${ANN_VM_NAME} annotation, so there is no VM to hibernate or wake`,
    );
  }
  return pod;
}

/** Creates or flips the pod's CocoonHibernation to `desire`; returns it as written. */
async function requestDesire(
  ctx: CommandContext,
  podName: string,
  existing: CocoonHibernation | undefined,
  desire: HibernationDesire,
): Promise<{ ch: CocoonHibernation; action: string }> {
  if (existing) {
    const name = existing.metadata.name ?? "";
    if (existing.spec.desire === desire) return { ch: existing, action: `unchanged (desire ${desire})` };
    const ch = await ctx.client.patch<CocoonHibernation>(COCOONHIBERNATIONS, ctx.namespace, name, {
      spec: { desire },
    });
    return { ch, action: `patched (desire ${desire})` };
  }
  // The CRD requires a new CocoonHibernation to be named after its pod.
  const ch = await ctx.client.create<CocoonHibernation>(COCOONHIBERNATIONS, ctx.namespace, {
    apiVersion: API_VERSION,
    kind: KIND_COCOONHIBERNATION,
    metadata: { name: podName, namespace: ctx.namespace },
    spec: { podRef: { name: podName }, desire },
  });
  return { ch, action: `created (desire ${desire})` };
}

export function judgeHibernation(
  ch: CocoonHibernation,
  pod: Pod | undefined,
  generation: number,
  desire: HibernationDesire,
): Verdict {
  const observed = ch.status?.observedGeneration ?? 0;
  const phase = ch.status?.phase ?? "";
  if (observed < generation) {
    return {
      kind: "waiting",
      progress: `waiting for the operator to observe generation ${generation} (observed ${observed})`,
    };
  }
  const ready = ch.status?.conditions?.find((c) => c.type === "Ready");
  if (phase === "Failed")
    return { kind: "failed", reason: "Failed", message: ready?.message ?? "phase Failed" };
  if (phase === DONE_PHASE[desire]) {
    return { kind: "done", summary: `pod "${ch.spec.podRef.name}" is ${phase} (generation ${generation})` };
  }
  const lifecycle = pod ? readLifecycleState(pod) : "";
  return {
    kind: "waiting",
    progress: `phase ${phase || "(none)"}; pod ${ch.spec.podRef.name} lifecycle ${lifecycle || "(none)"}`,
  };
}

export async function changeHibernation(
  ctx: CommandContext,
  podName: string,
  desire: HibernationDesire,
  timeoutMs: number | undefined,
): Promise<void> {
  await cocoonPod(ctx, podName);
  const existing = (await hibernations(ctx)).find((ch) => ch.spec?.podRef?.name === podName);
  const name = existing?.metadata.name ?? podName;
  // Watched from before the write, so a warning about this change is never taken for an old one.
  const warnings =
    timeoutMs === undefined ? undefined : await WarningWatch.start(ctx, KIND_COCOONHIBERNATION, name);
  let { ch, action } = await requestDesire(ctx, podName, existing, desire);
  const generation = ch.metadata.generation ?? 0;
  announce(ctx, COCOONHIBERNATIONS, name, action);
  if (warnings && timeoutMs !== undefined) {
    const what = `pod "${podName}" to ${desire === "Hibernate" ? "hibernate" : "wake"}`;
    const waited = await waitFor(
      pluginSession(ctx, timeoutMs),
      {
        what,
        queries: [
          { rt: COCOONHIBERNATIONS, name },
          { rt: PODS, name: podName },
        ],
        state: ([chs = [], pods = []]) => ({
          current: chs[0] as CocoonHibernation | undefined,
          pod: pods[0] as Pod | undefined,
        }),
        judge: ({ current, pod }) =>
          current
            ? judgeHibernation(current, pod, generation, desire)
            : { kind: "failed", reason: "Deleted", message: `cocoonhibernation "${name}" was deleted` },
        warnings,
      },
      pluginWait(ctx, timeoutMs),
    );
    ch = waited.current ?? ch;
  }
  if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(ch, ctx.output));
}
