// Leader election against a real kube-apiserver: two electors, one leader; a killed leader's lease
// is taken over once it expires, a released one at the standby's next retry.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { KubeClient, kubeConfigFromFile } from "../../src/controller/client.ts";
import { LeaderElector, type Lease } from "../../src/controller/leaderelection.ts";
import { LEASES } from "../../src/controller/resources.ts";
import { createNamespace, testEnv, waitFor } from "../env/testenv.ts";

/** Short timings (same ratios as 15/10/2 s) keep the test quick. */
const TIMINGS = { leaseDurationMs: 4000, renewDeadlineMs: 3000, retryPeriodMs: 800 };

function candidate(client: KubeClient, namespace: string, name: string, identity: string, release: boolean) {
  const elector = new LeaderElector({
    client,
    namespace,
    name,
    identity,
    releaseOnCancel: release,
    ...TIMINGS,
  });
  const abort = new AbortController();
  const state = { leading: false, stopped: false, leaderSignal: undefined as AbortSignal | undefined };
  const done = elector.run(
    {
      onStartedLeading: (signal) => {
        state.leading = true;
        state.leaderSignal = signal;
      },
      onStoppedLeading: () => {
        state.stopped = true;
      },
    },
    abort.signal,
  );
  return { elector, abort, state, done };
}

describe("leader election on a real API server", () => {
  let client: KubeClient;
  let ns: string;
  before(async () => {
    const env = testEnv();
    client = new KubeClient(kubeConfigFromFile(env.kubeconfigPath));
    ns = await createNamespace(env, "leader");
  });
  after(() => client.close());

  it("elects exactly one; the other takes over after the leader is killed", { timeout: 60_000 }, async () => {
    const a = candidate(client, ns, "killed", "a", false);
    await waitFor("a leads", async () => (a.state.leading ? true : undefined));
    const b = candidate(client, ns, "killed", "b", false);
    await waitFor("b sees a", async () => (b.elector.getLeader() === "a" ? true : undefined));
    assert.equal(b.state.leading, false);
    const lease = await client.get<Lease>(LEASES, ns, "killed");
    assert.equal(lease.spec?.holderIdentity, "a");
    assert.equal(lease.spec?.leaseDurationSeconds, 4);
    assert.match(lease.spec?.renewTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);

    // "Kill" a: it stops renewing and does not release.
    a.abort.abort();
    await a.done;
    assert.equal(a.state.leaderSignal?.aborted, true);
    assert.equal((await client.get<Lease>(LEASES, ns, "killed")).spec?.holderIdentity, "a");
    await waitFor("b takes over", async () => (b.state.leading ? true : undefined), 20_000);
    const taken = await client.get<Lease>(LEASES, ns, "killed");
    assert.equal(taken.spec?.holderIdentity, "b");
    assert.equal(taken.spec?.leaseTransitions, 1);
    b.abort.abort();
    await b.done;
  });

  it("a leader that shuts down releases the lease for the standby", { timeout: 60_000 }, async () => {
    const a = candidate(client, ns, "released", "a", true);
    await waitFor("a leads", async () => (a.state.leading ? true : undefined));
    const b = candidate(client, ns, "released", "b", true);
    await waitFor("b sees a", async () => (b.elector.getLeader() === "a" ? true : undefined));
    a.abort.abort();
    await a.done;
    const released = await client.get<Lease>(LEASES, ns, "released");
    assert.equal(released.spec?.holderIdentity, "");
    assert.equal(released.spec?.leaseDurationSeconds, 1);
    await waitFor("b takes over", async () => (b.state.leading ? true : undefined), 20_000);
    b.abort.abort();
    await b.done;
    assert.equal((await client.get<Lease>(LEASES, ns, "released")).spec?.holderIdentity, "");
  });
});
