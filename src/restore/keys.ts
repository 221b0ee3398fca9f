// The names CocoonRestore adds (docs/checkpoints.md): its conditions, reasons and events. The hold it
// puts on the set (ANN_RESTORE_HOLD) lives with the checkpoint's keys: a checkpoint's delete reads it.

export const CONDITION_RESTORED = "Restored";
export const CONDITION_PROGRESSING = "Progressing";

// Refusals: the restore is Failed with one of these and nothing was touched.
export const REASON_SET_NOT_FOUND = "SetNotFound";
export const REASON_SET_DELETING = "SetDeleting";
export const REASON_CHECKPOINT_NOT_FOUND = "CheckpointNotFound";
export const REASON_CHECKPOINT_NOT_READY = "CheckpointNotReady";
export const REASON_CHECKPOINT_DELETING = "CheckpointDeleting";
export const REASON_CHECKPOINT_OF_OTHER_SET = "CheckpointOfAnotherSet";
export const REASON_INCOMPATIBLE = "Incompatible";
export const REASON_NOTHING_TO_RESTORE = "NothingToRestore";
export const REASON_RESTORE_IN_PROGRESS = "RestoreInProgress";
export const REASON_API_UNAVAILABLE = "CheckpointsUnavailable";

// While Restoring (the condition reason and the restore's status.reason).
export const REASON_SUSPENDING = "Suspending";
export const REASON_COPYING = "Copying";
export const REASON_COPY_FAILED = "CopyFailed";
export const REASON_RESUMING = "Resuming";
// Restored; a set deleted under a restore under way fails it.
export const REASON_RESTORED = "Restored";
export const REASON_SET_DELETED = "SetDeletedDuringRestore";
/** Someone removed the restore's hold from the set: the restore stops where it is. */
export const REASON_HOLD_REMOVED = "HoldRemoved";
/** The API server refused a write of the pass (admission, quota): said, then retried with backoff. */
export const REASON_WRITE_REFUSED = "WriteRefused";
/** Not Restored by spec.failureDeadline: the restore lets go of the set, left recoverable. */
export const REASON_DEADLINE_EXCEEDED = "DeadlineExceeded";

// Event reasons, on the CocoonRestore (and, for the start and the end, on the set too).
export const EVENT_REFUSED = "RestoreRefused";
export const EVENT_STARTED = "RestoreStarted";
export const EVENT_COPIED = "RestoreCopied";
export const EVENT_COPY_FAILED = "RestoreCopyFailed";
export const EVENT_RESTORED = "Restored";
export const EVENT_FAILED = "RestoreFailed";
export const EVENT_WRITE_REFUSED = "RestoreWriteRefused";
