// The activity Leases' I/O half: the permission probe that lets an operator whose ClusterRole predates
// them start anyway, and what a pass reads and creates (over the in-memory client).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ApiError } from "../../../src/controller/errors.ts";
import { ActivityLeases, activityLeaseName, mayListActivityLeases } from "../../../src/idle/activity.ts";
import { cocoonSet } from "../../support/cocoonset.ts";
import { FakeClient } from "../../support/fakeclient.ts";

describe("activity Leases", () => {
  it("the probe says no on 403 (a ClusterRole from before them), yes on a list, and throws anything else", async () => {
    const client = new FakeClient();
    assert.equal(await mayListActivityLeases(client, undefined), true);
    client.failNext("list", "leases", new ApiError(403, "Forbidden", "leases is forbidden"));
    assert.equal(await mayListActivityLeases(client, undefined), false);
    client.failNext("list", "leases", new ApiError(500, "InternalError", "etcd down"));
    await assert.rejects(mayListActivityLeases(client, undefined), /etcd down/);
  });

  it("creates nothing and reads nothing until its cache has synced", async () => {
    const client = new FakeClient();
    // Never started: its cache has not synced.
    const leases = new ActivityLeases({
      list: (rt, ns, opts) => client.list(rt, ns, opts),
      watch: async function* () {},
    });
    const cs = cocoonSet();
    await leases.ensureReportable(cs, client);
    assert.deepEqual(client.writes(), []);
    assert.equal(leases.lastUseMs(cs), undefined);
    assert.equal(activityLeaseName("demo"), "cocoonset-activity-demo");
  });
});
