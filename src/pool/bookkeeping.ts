// The operator's bookkeeping keys: what it records on a set (which VMs teardown collects, which
// snapshots are owed a drop or a restore, who holds the set) and which pool or claim the set belongs
// to. Only the operator writes them: config/policy/bookkeeping-policy.yaml refuses anyone else's
// write, as annotation or label, and a pool member never takes one from its template.

import { ANN_RESTORE_HOLD } from "../checkpoint/keys.ts";
import {
  ANN_DELETE_VM_NAMES,
  ANN_HIBERNATE_RECLAIM,
  ANN_HIBERNATED_ON_NODE,
  ANN_REBUILD_HISTORY,
  ANN_SUSPENDING_SINCE,
} from "../contract/keys.ts";
import { ANN_POOL_TEMPLATE, LABEL_CLAIM, LABEL_CLAIMED_FROM, LABEL_POOL } from "./keys.ts";

export const BOOKKEEPING_KEYS: readonly string[] = [
  ANN_DELETE_VM_NAMES,
  ANN_HIBERNATE_RECLAIM,
  ANN_SUSPENDING_SINCE,
  ANN_HIBERNATED_ON_NODE,
  ANN_REBUILD_HISTORY,
  ANN_RESTORE_HOLD,
  LABEL_CLAIM,
  LABEL_CLAIMED_FROM,
  LABEL_POOL,
  ANN_POOL_TEMPLATE,
];
