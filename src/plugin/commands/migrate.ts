import { DEFAULT_NODE_POOL } from "../../apis/v1/types.ts";
import { LABEL_NODE_POOL, LABEL_SNAPSHOT_CPU_CLASS } from "../../contract/keys.ts";
import { getNode, getSet } from "../cluster.ts";
import { type Command, command } from "../command.ts";
import { DRY_RUN_FLAG } from "../dryrun.ts";
import { PluginError, UsageError } from "../errors.ts";
import { stringFlag } from "../flags.ts";
import { changeSet } from "../setstate.ts";
import { WAIT_FLAGS, waitTimeout } from "../wait.ts";

export const migrate: Command = command({
  name: "migrate",
  summary: "Move a set's main VM to another node, live state included",
  description: `Sets spec.nodeName. The operator hibernates the main, waits for its snapshot in the
registry, deletes it and restores it on the target node, then drops the snapshot once the new VM
runs. The node must carry the set's pool label (cocoonstack.io/pool) and, when the set has a
snapshotCompatibilityClass, the same cocoonstack.io/snapshot-cpu-class. With --wait the command
returns once the main runs on the node and the set is Ready; MigrateNoCapacity is reported while the
node has no seat.`,
  positionals: [{ name: "SET", complete: "cocoonsets" }],
  flags: [
    {
      name: "to",
      kind: "string",
      value: "NODE",
      help: "the node to move the main to",
      complete: "nodes",
      required: true,
    },
    ...WAIT_FLAGS,
    DRY_RUN_FLAG,
  ],
  examples: ["migrate demo --to node-b --wait"],
  async run(ctx, args) {
    const [name = ""] = args.positionals;
    const node = stringFlag(args, "to");
    if (!node) throw new UsageError(`migrate needs --to NODE`);
    const timeout = waitTimeout(args);
    const cs = await getSet(ctx, name);
    const target = await getNode(ctx, node);
    const labels = target.metadata.labels ?? {};
    const pool = cs.spec.nodePool || DEFAULT_NODE_POOL;
    if (labels[LABEL_NODE_POOL] !== pool) {
      const has =
        labels[LABEL_NODE_POOL] === undefined
          ? "has no such label"
          : `is in pool "${labels[LABEL_NODE_POOL]}"`;
      throw new PluginError(
        `node "${node}" is not in the set's pool: cocoonset "${name}" runs on ${LABEL_NODE_POOL}=${pool}, and the node ${has}`,
      );
    }
    const cpuClass = cs.spec.snapshotCompatibilityClass;
    if (cpuClass && labels[LABEL_SNAPSHOT_CPU_CLASS] !== cpuClass) {
      throw new PluginError(
        `node "${node}" cannot restore the set's snapshots: cocoonset "${name}" needs ${LABEL_SNAPSHOT_CPU_CLASS}=${cpuClass}, the node has "${labels[LABEL_SNAPSHOT_CPU_CLASS] ?? ""}"`,
      );
    }
    await changeSet(
      ctx,
      name,
      { spec: { nodeName: node } },
      { kind: "migrated", node },
      timeout,
      `migrating to ${node}`,
    );
  },
});
