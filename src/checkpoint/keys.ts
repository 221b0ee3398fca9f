// The names checkpoints and branching add to the contract (docs/checkpoints.md). All are
// new: the annotations sit under cocoonset.cocoonstack.io/ beside the Go operator's, which ignores them.

/** On a new CocoonSet: branch it from the named CocoonCheckpoint in its namespace, before its first pod. */
export const ANN_FROM_CHECKPOINT = "cocoonset.cocoonstack.io/from-checkpoint";
/** On a CocoonSet: keep its N newest Ready checkpoints and delete older ones. */
export const ANN_KEEP_CHECKPOINTS = "cocoonset.cocoonstack.io/keep-checkpoints";
/** On a CocoonCheckpoint, "true": keep-checkpoints never deletes it (nor counts it among the N). */
export const ANN_PINNED = "cocoonset.cocoonstack.io/pinned";
/**
 * On a CocoonSet while a CocoonRestore holds it (one at a time per set): JSON
 * `{"restore":<name>,"uid":<uid>,"checkpoint":<name>,"suspend":<spec.suspend before>}`. The checkpoint
 * it names keeps its tags while it is there (a delete waits, keep-checkpoints skips it).
 */
export const ANN_RESTORE_HOLD = "cocoonset.cocoonstack.io/restore";
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
/** The CocoonSet condition saying which checkpoint the set came from, or why it has not branched. */
export const CONDITION_BRANCHED = "Branched";
// Its reasons while False. Copying and CopyFailed mark a branch under way: the checkpoint's delete
// waits for it. NotApplied is final: the annotation came to a set that already had state.
// Incompatible: a member cannot restore as the spec asks; nothing was copied.
export const BRANCH_WAITING = "WaitingForCheckpoint";
export const BRANCH_COPYING = "Copying";
export const BRANCH_COPY_FAILED = "CopyFailed";
export const BRANCH_NOT_APPLIED = "NotApplied";
export const BRANCH_INCOMPATIBLE = "Incompatible";

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
