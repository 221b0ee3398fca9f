// A CocoonSet's state as the plugin shows it and changes it: the members and judges are the SDK's
// (src/sdk/setstate.ts); the plugin reads a set for `status`, and prints around the SDK's changeSet.

import type { CocoonSet } from "../apis/v1/types.ts";
import { COCOONSETS } from "../controller/resources.ts";
import { type SetGoal, type SetPatch, type SetState, changeSet as sdkChangeSet } from "../sdk/setstate.ts";
import { getSet, setPods } from "./cluster.ts";
import type { CommandContext } from "./command.ts";
import { announce, formatStructured } from "./output.ts";
import { pluginSession, pluginWait } from "./wait.ts";

export {
  ANN_RELEASE_UNTIL_RESUME,
  conditionAt,
  fieldManager,
  judgeSet,
  memberState,
  membersOf,
  type SetGoal,
  type SetMember as Member,
  type SetPatch,
  type SetState,
  setWait,
} from "../sdk/setstate.ts";

export async function readSetState(ctx: CommandContext, name: string): Promise<SetState> {
  const [cs, pods] = await Promise.all([getSet(ctx, name), setPods(ctx, name)]);
  return { cs, pods };
}

/**
 * Merge-patches the set, reports the generation the write produced, and with --wait waits until
 * `goal` holds at that generation. Prints the final object for -o json|yaml.
 */
export async function changeSet(
  ctx: CommandContext,
  name: string,
  patch: SetPatch,
  goal: SetGoal,
  timeoutMs: number | undefined,
  done: string,
): Promise<void> {
  const wait = timeoutMs === undefined ? undefined : pluginWait(ctx, timeoutMs);
  const cs: CocoonSet = await sdkChangeSet(pluginSession(ctx, timeoutMs), name, patch, goal, wait, () =>
    announce(ctx, COCOONSETS, name, done),
  );
  if (ctx.output === "json" || ctx.output === "yaml") ctx.out(formatStructured(cs, ctx.output));
}
