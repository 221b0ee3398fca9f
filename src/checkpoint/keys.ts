// The names checkpoints and branching add to the contract (docs/checkpoints.md). All are
// new: the annotations sit under cocoonset.cocoonstack.io/ beside the Go operator's, which ignores them.

// The restore hold, the from-checkpoint annotation and the Branched condition say who holds a set:
// the hold rule (src/holds.ts) reads them, so they are defined there.
export {
  ANN_FROM_CHECKPOINT,
  ANN_RESTORE_HOLD,
  BRANCH_COPY_FAILED,
  BRANCH_COPYING,
  BRANCH_INCOMPATIBLE,
  BRANCH_NOT_APPLIED,
  CONDITION_BRANCHED,
} from "../holds.ts";

/** On a CocoonSet: keep its N newest Ready checkpoints and delete older ones. */
export const ANN_KEEP_CHECKPOINTS = "cocoonset.cocoonstack.io/keep-checkpoints";
/** On a CocoonCheckpoint, "true": keep-checkpoints never deletes it (nor counts it among the N). */
export const ANN_PINNED = "cocoonset.cocoonstack.io/pinned";
/** Held while the checkpoint's tags may exist; removed once every one is gone. */
export const FINALIZER_COCOONCHECKPOINT = "cocooncheckpoint.cocoonset.cocoonstack.io/finalizer";
/**
 * Stamped on each checkpoint manifest (`<namespace>/<name>`). It makes the checkpoint's digest its
 * own: a registry deletes a manifest by digest together with every tag naming it, so a copy sharing
 * `:hibernate`'s digest would vanish when the set wakes and step 10 drops that tag, and deleting the
 * checkpoint would take a still-suspended set's `:hibernate` with it.
 */
export const MANIFEST_ANN_CHECKPOINT = "cocoonset.cocoonstack.io/checkpoint";
/** Stamped on a branch's `:hibernate` written into the checkpoint's own repository (`<ns>/<set>`). */
export const MANIFEST_ANN_BRANCH = "cocoonset.cocoonstack.io/branch";
/**
 * Stamped on every manifest the operator writes within a repository: the uid of the object the write
 * is for (the CocoonCheckpoint of a `ckpt-` tag, the CocoonRestore or the branched CocoonSet of a
 * `:hibernate`). Two writes for different objects then never share a digest, even when all else is
 * equal (a restore from a checkpoint taken of an earlier restore), while a retry of one write puts
 * the same bytes again and finds them in place.
 */
export const MANIFEST_ANN_WRITE = "cocoonset.cocoonstack.io/write";
// Branched=False while the branch waits for its checkpoint. Copying and CopyFailed mark a branch under
// way: the checkpoint's delete waits for it. NotApplied is final: the annotation came to a set that
// already had state. Incompatible: a member cannot restore as the spec asks; nothing was copied.
export const BRANCH_WAITING = "WaitingForCheckpoint";

const CHECKPOINT_TAG_PREFIX = "ckpt-";

/** `ckpt-<checkpoint name>`: the tag in each member VM's own repository, so a copy moves no blob. */
export function checkpointTag(checkpointName: string): string {
  return `${CHECKPOINT_TAG_PREFIX}${checkpointName}`;
}

// Event reasons, on the CocoonCheckpoint unless noted.
export const REASON_WAITING = "CheckpointWaiting";
export const REASON_COPYING = "CheckpointCopying";
export const REASON_READY = "CheckpointReady";
export const REASON_PRUNED = "CheckpointPruned";
export const REASON_TAGS_DELETED = "CheckpointTagsDeleted";
export const REASON_TAG_DELETE_FAILED = "CheckpointTagDeleteFailed";
export const REASON_KEEP_INVALID = "KeepCheckpointsInvalid";
export const REASON_COPY_FAILED = "CheckpointCopyFailed";
export const REASON_FAILED = "CheckpointFailed";
export const REASON_DELETE_WAITING = "CheckpointDeleteWaiting";
/** On the CocoonSet. */
export const REASON_BRANCH_WAITING = "BranchWaiting";
export const REASON_BRANCH_FAILED = "BranchCopyFailed";
export const REASON_BRANCH_INCOMPATIBLE = "BranchIncompatible";
export const REASON_BRANCHED = "Branched";
export const REASON_BRANCH_NOT_APPLIED = "BranchNotApplied";
