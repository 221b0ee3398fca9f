// The names warm pools add (docs/pools.md): labels on member CocoonSets, finalizers, conditions and
// event reasons. All sit under cocoonset.cocoonstack.io/, which the Go operator ignores.

/** On an unclaimed member: the pool that keeps it (the /scale selector). */
export const LABEL_POOL = "cocoonset.cocoonstack.io/pool";
/** On a bound member: the claim that owns it. */
export const LABEL_CLAIM = "cocoonset.cocoonstack.io/claim";
/** On a bound member: the pool it was claimed from (counted as the pool's claimed members). */
export const LABEL_CLAIMED_FROM = "cocoonset.cocoonstack.io/claimed-from";
/** On a member: the hash of the pool template it was made from; another hash makes it outdated. */
export const ANN_POOL_TEMPLATE = "cocoonset.cocoonstack.io/pool-template";

/** Held until the pool's unclaimed members are deleted. */
export const FINALIZER_COCOONPOOL = "cocoonpool.cocoonset.cocoonstack.io/finalizer";
/** Held until the bound set is deleted. */
export const FINALIZER_COCOONCLAIM = "cocoonclaim.cocoonset.cocoonstack.io/finalizer";

/** On a pool: `replicas` members ready to claim. On a claim: its bound set Running. */
export const CONDITION_READY = "Ready";

// Pending reasons of a claim, and its condition reasons.
export const REASON_POOL_NOT_FOUND = "PoolNotFound";
export const REASON_NO_READY_MEMBER = "NoReadyMember";
export const REASON_BOUND = "Bound";
export const REASON_WAKING = "Waking";
export const REASON_STARTING = "Starting";
export const REASON_SET_READY = "SetRunning";
export const REASON_SET_GONE = "SetGone";
/** The API server refused the bind (an admission policy, a webhook): the claim says so and backs off. */
export const REASON_BIND_REFUSED = "BindRefused";

// Event reasons, on the pool.
export const REASON_MEMBER_CREATED = "MemberCreated";
export const REASON_MEMBER_DELETED = "MemberDeleted";
export const REASON_MEMBER_SUSPENDED = "MemberSuspending";
export const REASON_FILLED = "PoolReady";
// On the claim.
export const REASON_CLAIM_READY = "ClaimReady";
export const REASON_CLAIM_RELEASED = "Released";

// Pool condition reasons.
export const REASON_ENOUGH_READY = "EnoughReady";
export const REASON_FILLING = "Filling";
/**
 * The API server refused a member's create (an admission policy, a ResourceQuota on CocoonSets): the
 * Ready condition's reason and a Warning event, and the pool backs off.
 */
export const REASON_CREATE_REFUSED = "MemberCreateRefused";
/** Likewise for the delete of an outdated or surplus member, and the suspend of a booted one. */
export const REASON_DELETE_REFUSED = "MemberDeleteRefused";
export const REASON_SUSPEND_REFUSED = "MemberSuspendRefused";
