import { getSet, setPods } from "../cluster.ts";
import { type Command, command } from "../command.ts";
import { UsageError } from "../errors.ts";
import { age, formatStructured, formatTable, humanSize } from "../output.ts";
import { membersOf } from "../setstate.ts";
import { requireRegistry, type SnapshotTag, vmSnapshots } from "../snapshots.ts";

export const snapshots: Command = command({
  name: "snapshots",
  summary: "List every registry tag of every VM of a set, with size and age",
  description: `Lists the tags under <registry>/<vm> for each VM of the set (every agent slot and
toolbox of the spec, and any other pod the set still has): :hibernate while a VM is suspended,
hibernated or migrating, :latest from routine snapshots. Needs the operator's registry: --registry
or OCI_REGISTRY.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }],
  flags: [],
  examples: ["snapshots demo", "snapshots demo -o wide --registry registry.example.com/cocoon"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    if (ctx.output === "name") {
      throw new UsageError(
        "snapshots are registry tags, not API objects: -o name does not apply; -o json lists them",
      );
    }
    const registry = requireRegistry(await ctx.registry());
    const cs = await getSet(ctx, name);
    const members = membersOf(cs, await setPods(ctx, name));
    const tags: SnapshotTag[] = [];
    for (const member of members) tags.push(...(await vmSnapshots(registry, member.vmName)));
    if (ctx.output === "json" || ctx.output === "yaml") {
      ctx.out(formatStructured({ cocoonset: name, namespace: ctx.namespace, snapshots: tags }, ctx.output));
      return;
    }
    if (tags.length === 0) {
      ctx.info(`no snapshots in ${registry.base.host}/${registry.base.path} for cocoonset "${name}"`);
      return;
    }
    const now = ctx.now();
    const wide = ctx.output === "wide";
    const headers = ["vm", "tag", "size", "age", ...(wide ? ["digest", "base image"] : [])];
    const rows = tags.map((t) => [
      t.vm,
      t.tag,
      humanSize(t.size),
      age(t.created, now),
      ...(wide ? [t.digest, t.baseImage || "-"] : []),
    ]);
    ctx.out(formatTable(headers, rows));
  },
});
