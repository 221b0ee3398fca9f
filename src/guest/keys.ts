// The names guest hooks add to the contract (docs/guest.md). All are new, under
// cocoonset.cocoonstack.io/ beside the Go operator's keys, which ignores them.

/** On a CocoonSet (pool templates pass it to members): the CocoonGuestPolicy of its namespace it follows. */
export const ANN_GUEST_POLICY = "cocoonset.cocoonstack.io/guest-policy";
/**
 * On a pod, written by the operator only: what its hooks did for the VM it runs now (record.ts). The
 * gates read it, so a pod's own writers cannot: the bookkeeping admission policy guards it.
 */
export const ANN_GUEST_HOOKS = "cocoonset.cocoonstack.io/guest-hooks";

/**
 * Inside the guest: whose state this is, `<vm name>@<set uid>`, written once a VM's post hooks
 * succeeded. A guest that shows another VM's mark, or none, runs on copied state: a clone.
 */
export const GUEST_OWNER_FILE = "/var/lib/cocoon/owner";

/** The CocoonSet condition that says how its members' hooks stand (sets naming a policy only). */
export const CONDITION_GUEST_HOOKS = "GuestHooks";

// Condition reasons, and the Ready condition's reason while hooks hold members back.
export const REASON_HOOKS_SUCCEEDED = "HooksSucceeded";
export const REASON_HOOKS_PENDING = "HooksPending";
export const REASON_HOOK_FAILED = "HookFailed";
export const REASON_POLICY_NOT_FOUND = "GuestPolicyNotFound";

// Events, on the CocoonSet (or the CocoonHibernation a pre-hibernate hook ran for).
export const REASON_EVENT_HOOK_SUCCEEDED = "GuestHookSucceeded";
export const REASON_EVENT_HOOK_FAILED = "GuestHookFailed";
export const REASON_EVENT_HOOK_IGNORED = "GuestHookIgnored";
/** On the CocoonSet whose suspend (or migration) a failed pre-hibernate hook stopped. */
export const REASON_PRE_HIBERNATE_FAILED = "PreHibernateHookFailed";

/** A hook's output in an event or a record: at most this many characters, the rest cut. */
export const MAX_REPORTED_OUTPUT = 256;

/**
 * A hook that failed under Fail is tried again after this (an edit of the policy tries it at once):
 * a guest that was briefly unreachable recovers without anyone's help, and a broken hook is not run
 * in a tight loop.
 */
export const FAILED_HOOK_RETRY_MS = 5 * 60_000;
