import { checkpointTag } from "../../checkpoint/keys.ts";
import { COCOONCHECKPOINTS } from "../../controller/resources.ts";
import { checkpointsOf, heldMembers } from "../../sdk/checkpoints.ts";
import { findSet } from "../cluster.ts";
import { type Command, command } from "../command.ts";
import { PluginError } from "../errors.ts";
import { age, formatStructured, formatTable, humanSize, objectName } from "../output.ts";

export const checkpoints: Command = command({
  name: "checkpoints",
  summary: "List a set's checkpoints: phase, members, bytes, age",
  description: `Lists the CocoonCheckpoints of the namespace whose spec.cocoonSetRef names the set, oldest
first. MEMBERS counts the VMs whose snapshot the checkpoint holds; BYTES is status.totalBytes. A
set's checkpoints outlive it, so they are listed after the set is deleted too. -o wide adds the
registry tag and the status message; -o json|yaml adds each member (role, slot or toolbox, VM,
digest, image, bytes).`,
  positionals: [{ name: "SET", complete: "cocoonsets" }],
  flags: [],
  examples: ["checkpoints demo", "checkpoints demo -o wide"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    const [list, set] = await Promise.all([checkpointsOf(ctx, name), findSet(ctx, name)]);
    if (!set && list.length === 0)
      throw new PluginError(
        `cocoonset "${name}" not found in namespace "${ctx.namespace}", and no checkpoint names it`,
      );
    if (!set) ctx.info(`cocoonset "${name}" no longer exists; its checkpoints remain`);
    if (ctx.output === "name") {
      for (const ck of list) ctx.out(objectName(COCOONCHECKPOINTS, ck.metadata.name ?? ""));
      return;
    }
    if (ctx.output === "json" || ctx.output === "yaml") {
      const items = list.map((ck) => ({
        name: ck.metadata.name,
        phase: ck.status?.phase,
        message: ck.status?.message,
        tag: checkpointTag(ck.metadata.name ?? ""),
        totalBytes: ck.status?.totalBytes,
        created: ck.metadata.creationTimestamp,
        readyTime: ck.status?.readyTime,
        members: ck.status?.members ?? [],
      }));
      ctx.out(
        formatStructured({ cocoonset: name, namespace: ctx.namespace, checkpoints: items }, ctx.output),
      );
      return;
    }
    if (list.length === 0) {
      ctx.info(`no checkpoints of cocoonset "${name}" in namespace "${ctx.namespace}"`);
      return;
    }
    const now = ctx.now();
    const wide = ctx.output === "wide";
    const headers = ["name", "phase", "members", "bytes", "age", ...(wide ? ["tag", "message"] : [])];
    const rows = list.map((ck) => [
      ck.metadata.name ?? "",
      ck.status?.phase ?? "<none>",
      String(heldMembers(ck).length),
      ck.status?.totalBytes === undefined ? "-" : humanSize(ck.status.totalBytes),
      age(ck.metadata.creationTimestamp, now),
      ...(wide ? [checkpointTag(ck.metadata.name ?? ""), ck.status?.message || "-"] : []),
    ]);
    ctx.out(formatTable(headers, rows));
  },
});
