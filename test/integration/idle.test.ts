// Idle suspend and expiry (docs/idle.md) end to end on the real API server, scheduler and registry with
// the vk-cocoon simulator, in seconds: a Running set parks itself after its suspend-after-idle (its
// VM hibernated, its snapshot pushed), a last-activity touch — an annotation-only patch, which wakes
// no watch — postpones that, an expired set is deleted through the finalizer, a bad value is a
// Warning event, the idle clock survives an operator restart, and `kubectl get` shows the
// IDLE-SUSPEND column. `kubectl annotate` of a policy on a settled Running set passes the watch and
// arms (or lifts) the deadline at once; once parked, the set's passes make no API call.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseAllDocuments } from "yaml";
import type { CocoonSet } from "../../src/apis/v1/types.ts";
import { ANN_HIBERNATE, TAG_HIBERNATE } from "../../src/contract/keys.ts";
import { activityLeaseName } from "../../src/idle/activity.ts";
import {
  ANN_EXPIRE_ACTION,
  ANN_EXPIRE_AT,
  ANN_EXPIRE_DELETE_GRACE,
  ANN_LAST_ACTIVITY,
  ANN_PARKED_AT,
  ANN_SUSPEND_AFTER_IDLE,
} from "../../src/idle/policy.ts";
import { REQUEUE_POLL_MS } from "../../src/pass/pass.ts";
import { formatRFC3339Nano } from "../../src/rfc3339.ts";
import { controlPlaneBinDir } from "../env/controlplane.ts";
import { OciClient } from "../env/simulator/index.ts";
import { apiRequest, testEnv, waitFor } from "../env/testenv.ts";
import { getSet, objectEvents, type SetEvent, setPods, setsPath } from "../support/setapi.ts";
import { SettledPassProbe } from "../support/settledpass.ts";
import { type SetEnv, startSetEnv } from "../support/setwait.ts";

const IMAGE = "ubuntu-dev-base";
const env = testEnv();
const oci = new OciClient(env.registry);
const suffix = randomBytes(3).toString("hex");
const pool = `idle-${suffix}`;
let ns: string;
let e2e: SetEnv;

before(async () => {
  e2e = await startSetEnv(env, "csidle", { nodes: [{ name: `idle-${suffix}`, pool }] });
  ns = e2e.ns;
});

after(async () => {
  await e2e?.stop();
});

async function createSet(name: string, annotations: Record<string, string>): Promise<void> {
  const cs: CocoonSet = {
    apiVersion: "cocoonset.cocoonstack.io/v1",
    kind: "CocoonSet",
    metadata: { name, namespace: ns, annotations },
    spec: { nodePool: pool, agent: { image: IMAGE, replicas: 0, mode: "clone" } },
  };
  const res = await apiRequest(env, "POST", setsPath(ns), cs);
  assert.equal(res.status, 201, JSON.stringify(res.body));
}

function kubectl(args: string[]): string {
  return execFileSync(
    join(controlPlaneBinDir(), "kubectl"),
    ["--kubeconfig", env.kubeconfigPath, "-n", ns, ...args],
    { encoding: "utf8" },
  );
}

/** An annotation-only merge patch, as a gateway or `kubectl annotate` writes it. */
async function annotateSet(name: string, annotations: Record<string, string>): Promise<void> {
  const res = await apiRequest(
    env,
    "PATCH",
    `${setsPath(ns)}/${name}`,
    { metadata: { annotations } },
    "application/merge-patch+json",
  );
  assert.equal(res.status, 200, JSON.stringify(res.body));
}

function waitForSet(name: string, what: string, check: (cs: CocoonSet) => boolean, timeoutMs = 60_000) {
  return waitFor(
    `${name}: ${what}`,
    async () => {
      const cs = await getSet(env, ns, name);
      return check(cs) ? cs : undefined;
    },
    timeoutMs,
  );
}

function waitForEvent(name: string, reason: string): Promise<SetEvent> {
  return waitFor(`${name}: event ${reason}`, async () =>
    (await objectEvents(env, ns, name)).find((e) => e.reason === reason),
  );
}

const isRunning = (cs: CocoonSet) =>
  cs.status?.phase === "Running" && cs.status.observedGeneration === cs.metadata.generation;

describe("idle suspend and expiry on the real environment", () => {
  // First in the file: the namespace holds only this set, so "the operator is quiet" is about it.
  it("kubectl annotate arms suspend-after-idle on a settled Running set at once; parked, it costs no call", async () => {
    const name = "annotated";
    await createSet(name, {});
    const running = await waitForSet(name, "Running", isRunning);
    assert.equal(running.status?.idleSuspendAt, undefined);
    const probe = new SettledPassProbe(env.registry);
    probe.attach(e2e.operator.operator);
    // Settled: quiet for longer than any poll a pass asks for, so no pass is pending and only the
    // annotation's own watch event can start one.
    await probe.waitForQuiet(REQUEUE_POLL_MS + 1_000);

    const annotatedAt = Date.now();
    kubectl(["annotate", "cocoonset", name, `${ANN_SUSPEND_AFTER_IDLE}=4s`]);

    // The clock starts when the operator sees the policy (kept to the second), not at Running.
    const armed = await waitForSet(name, "status.idleSuspendAt", (cs) => !!cs.status?.idleSuspendAt);
    const clockStart = Date.parse(armed.status?.idleClockStart ?? "");
    assert.ok(clockStart >= Math.floor(annotatedAt / 1000) * 1000, armed.status?.idleClockStart);
    assert.equal(Date.parse(armed.status?.idleSuspendAt ?? ""), clockStart + 4_000);

    const parked = await waitForSet(name, "Suspended", (cs) => cs.status?.phase === "Suspended");
    // Nothing else changed the set: the one new generation is the operator's spec.suspend patch.
    assert.equal(parked.metadata.generation, (running.metadata.generation ?? 0) + 1);
    assert.deepEqual(parked.spec, { ...running.spec, suspend: true });
    const parkedAt = Date.parse(parked.metadata.annotations?.[ANN_PARKED_AT] ?? "");
    assert.ok(parkedAt >= clockStart + 4_000, `parked ${parkedAt - clockStart} ms after the clock start`);
    const event = await waitForEvent(name, "IdleSuspended");
    assert.match(event.message, /^idle for \d+s \(suspend-after-idle 4s\): suspending$/);

    // Parked with its policy still on it, nothing is pending: a pass makes no API call and asks no
    // requeue. (The suspend gate of step 6 probes a Suspended set's snapshot in the registry at every
    // pass, policy or not; that is not the policy's cost.)
    await probe.waitForQuiet(2_000);
    const run = await probe.run(ns, [name]);
    assert.deepEqual(
      { requests: run.requests, chLists: run.chLists, events: run.events, results: run.results },
      { requests: {}, chLists: 0, events: 0, results: ["{}"] },
    );
  });

  it("parks an idle Running set after suspend-after-idle, later than a last-activity touch allows", async () => {
    const name = "idler";
    await createSet(name, { [ANN_SUSPEND_AFTER_IDLE]: "6s" });
    const running = await waitForSet(name, "Running", isRunning);
    const clockStart = Date.parse(running.status?.idleClockStart ?? "");
    assert.equal(Date.parse(running.status?.idleSuspendAt ?? ""), clockStart + 6_000);

    // A touch while Running: annotation-only, so no watch event; the pass the operator armed for the
    // old deadline reads it and re-arms.
    const touchedAt = new Date().toISOString();
    await annotateSet(name, { [ANN_LAST_ACTIVITY]: touchedAt });
    assert.ok(Date.parse(touchedAt) > clockStart, "the touch is later than the clock's start");

    const suspended = await waitForSet(name, "Suspended", (cs) => cs.status?.phase === "Suspended", 90_000);
    assert.equal(suspended.spec.suspend, true);
    const parkedAt = Date.parse(suspended.metadata.annotations?.[ANN_PARKED_AT] ?? "");
    assert.ok(
      parkedAt >= Date.parse(touchedAt) + 6_000,
      `parked at ${new Date(parkedAt).toISOString()}, touched at ${touchedAt}`,
    );
    const event = await waitForEvent(name, "IdleSuspended");
    assert.equal(event.type, "Normal");
    assert.match(event.message, /^idle for \d+s \(suspend-after-idle 6s\): suspending$/);
    // The ordinary suspend ran: the VM hibernated and its snapshot is in the registry.
    const [main] = await setPods(env, ns, name);
    assert.equal(main?.metadata.annotations?.[ANN_HIBERNATE], "true");
    assert.notEqual(await oci.getManifest(oci.repository(`vk-${ns}-${name}-0`), TAG_HIBERNATE), null);
    assert.equal(suspended.status?.idleSuspendAt, undefined);

    // Resumed by hand, it runs again and the parking record goes.
    const resume = await apiRequest(
      env,
      "PATCH",
      `${setsPath(ns)}/${name}`,
      { spec: { suspend: false } },
      "application/merge-patch+json",
    );
    assert.equal(resume.status, 200, JSON.stringify(resume.body));
    const woken = await waitForSet(name, "Running again", isRunning, 90_000);
    assert.equal(woken.metadata.annotations?.[ANN_PARKED_AT], undefined);
  });

  it("keeps the idle clock across an operator restart: a deadline passed while it was down acts at its start", async () => {
    const name = "restarted";
    await createSet(name, { [ANN_SUSPEND_AFTER_IDLE]: "5s" });
    const running = await waitForSet(name, "Running", isRunning);
    const deadline = Date.parse(running.status?.idleSuspendAt ?? "");
    await e2e.operator.stop();
    // Down until well past the deadline; a clock restarted by the new operator would wait 5 s more.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - Date.now()) + 3_000));
    const startedAt = Date.now();
    await e2e.startOperator();

    const parked = await waitForSet(name, "spec.suspend", (cs) => cs.spec.suspend === true);
    const parkedAt = Date.parse(parked.metadata.annotations?.[ANN_PARKED_AT] ?? "");
    assert.ok(parkedAt < startedAt + 5_000, `parked ${parkedAt - startedAt} ms after the restart`);
    const event = await waitForEvent(name, "IdleSuspended");
    const idleSeconds = Number(/^idle for (\d+)s /.exec(event.message)?.[1]);
    assert.ok(idleSeconds >= 8, event.message);
  });

  it("an expire-at already past with expire-action Delete gives notice, waits its grace, then deletes through the finalizer", async () => {
    const name = "expirer";
    const expireAt = new Date(Date.now() - 60 * 60_000).toISOString();
    await createSet(name, {
      [ANN_EXPIRE_AT]: expireAt,
      [ANN_EXPIRE_ACTION]: "Delete",
      [ANN_EXPIRE_DELETE_GRACE]: "20s",
    });
    const notice = await waitForEvent(name, "ExpiringSoon");
    assert.equal(notice.type, "Warning");
    assert.match(
      notice.message,
      /deleting the set at .*, no sooner than expire-delete-grace 20s after this notice/,
    );
    const noticed = await waitForSet(name, "status.expiryNoticedAt", (cs) => !!cs.status?.expiryNoticedAt);
    const noticedAt = Date.parse(noticed.status?.expiryNoticedAt ?? "");
    assert.equal(noticed.metadata.deletionTimestamp, undefined, "not deleted at once");

    await waitFor(
      `${name} gone`,
      async () => {
        const res = await apiRequest(env, "GET", `${setsPath(ns)}/${name}`);
        return res.status === 404 ? true : undefined;
      },
      90_000,
    );
    assert.deepEqual(await setPods(env, ns, name), []);
    assert.ok(Date.now() >= noticedAt + 20_000, "deleted no sooner than the grace after the notice");
    const event = await waitForEvent(name, "Expired");
    assert.equal(event.message, `expire-at ${formatRFC3339Nano(Date.parse(expireAt))} reached: deleting`);
  });

  it("a renewal of the set's activity Lease postpones the idle suspend, seen through the watch", async () => {
    const name = "leased";
    await createSet(name, { [ANN_SUSPEND_AFTER_IDLE]: "20s" });
    const armed = await waitForSet(
      name,
      "Running with an idle deadline",
      (cs) => isRunning(cs) && !!cs.status?.idleSuspendAt,
    );
    const firstDeadline = Date.parse(armed.status?.idleSuspendAt ?? "");
    const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${activityLeaseName(name)}`;
    const lease = await waitFor(`${name}: its activity Lease`, async () => {
      const res = await apiRequest(env, "GET", leasePath);
      return res.status === 200
        ? (res.body as { metadata: { ownerReferences?: { name: string }[] } })
        : undefined;
    });
    assert.deepEqual(
      lease.metadata.ownerReferences?.map((o) => o.name),
      [name],
    );

    await new Promise((done) => setTimeout(done, 3_000));
    const renewedAt = Date.now();
    const res = await apiRequest(
      env,
      "PATCH",
      leasePath,
      // A MicroTime: RFC 3339 with exactly six fractional digits.
      {
        spec: {
          renewTime: new Date(renewedAt).toISOString().replace("Z", "000Z"),
          holderIdentity: "gateway",
        },
      },
      "application/merge-patch+json",
    );
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const moved = await waitForSet(
      name,
      "idleSuspendAt moved by the renewal",
      (cs) => Date.parse(cs.status?.idleSuspendAt ?? "") > firstDeadline,
      15_000,
    );
    // The status writer's clock counts whole seconds, and a renewal later than it counts as then.
    const movedTo = Date.parse(moved.status?.idleSuspendAt ?? "");
    assert.ok(
      movedTo >= Math.floor(renewedAt / 1000) * 1000 + 20_000 && movedTo <= renewedAt + 20_000,
      moved.status?.idleSuspendAt,
    );
    assert.equal((await getSet(env, ns, name)).spec.suspend, undefined);
  });

  it("the sample activity-reporter RBAC lets its holder renew that Lease and nothing else", async () => {
    const docs = parseAllDocuments(
      readFileSync(join(import.meta.dirname, "../../config/samples/activity-reporter.yaml"), "utf8"),
    ).map((d) => d.toJS() as { kind: string; metadata: { name: string } });
    const collection: Record<string, string> = {
      ServiceAccount: `/api/v1/namespaces/${ns}/serviceaccounts`,
      Role: `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
      RoleBinding: `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`,
    };
    for (const doc of docs) {
      const res = await apiRequest(env, "POST", collection[doc.kind] ?? "", doc);
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
    const can = async (group: string, resource: string, verb: string, name: string) => {
      const res = await apiRequest(env, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: `system:serviceaccount:${ns}:demo-gateway`,
          groups: ["system:serviceaccounts", "system:authenticated"],
          resourceAttributes: { group, resource, verb, name, namespace: ns },
        },
      });
      return (res.body as { status: { allowed?: boolean } }).status.allowed === true;
    };
    const own = activityLeaseName("demo-cocoonset");
    for (const verb of ["get", "update", "patch"]) {
      assert.ok(await can("coordination.k8s.io", "leases", verb, own), verb);
    }
    assert.equal(await can("coordination.k8s.io", "leases", "patch", activityLeaseName("other")), false);
    assert.equal(await can("coordination.k8s.io", "leases", "delete", own), false);
    assert.equal(await can("cocoonset.cocoonstack.io", "cocoonsets", "patch", "demo-cocoonset"), false);
    assert.equal(await can("cocoonset.cocoonstack.io", "cocoonsets", "get", "demo-cocoonset"), false);
  });

  it("warns about a bad duration and leaves the set alone", async () => {
    const name = "typo";
    await createSet(name, { [ANN_SUSPEND_AFTER_IDLE]: "10 minutes" });
    await waitForSet(name, "Running", isRunning);
    const event = await waitForEvent(name, "IdlePolicyInvalid");
    assert.equal(event.type, "Warning");
    assert.match(event.message, /suspend-after-idle="10 minutes": time: unknown unit/);
    const cs = await getSet(env, ns, name);
    assert.equal(cs.spec.suspend, undefined);
    assert.equal(cs.status?.idleSuspendAt, undefined);
  });

  it("kubectl get shows when a set will be idle-suspended, and nothing once kubectl annotate removes the policy", async () => {
    const name = "shown";
    await createSet(name, { [ANN_SUSPEND_AFTER_IDLE]: "1h" });
    await waitForSet(name, "Running", isRunning);
    // Read together until they agree: a pass on a cache behind the operator's own status write may
    // restamp the idle clock a second later.
    const [header, shown, stored] = await waitFor("kubectl's column to match the status", async () => {
      const table = kubectl(["get", "cocoonset", name]);
      const [head = "", row = ""] = table.trim().split("\n");
      const status = (await getSet(env, ns, name)).status;
      const value = row.split(/\s+/).at(-1);
      return value === status?.idleSuspendAt ? [head, value, status?.idleSuspendAt] : undefined;
    });
    assert.deepEqual(header.split(/\s+/), ["NAME", "PHASE", "READY", "DESIRED", "AGE", "IDLE-SUSPEND"]);
    assert.ok(Date.parse(stored ?? "") > Date.now(), `${shown} is ahead`);

    // `kubectl annotate NAME KEY-` lifts the policy at once (settled first, so no other pass does it):
    // the column empties, the clock goes.
    const probe = new SettledPassProbe(env.registry);
    probe.attach(e2e.operator.operator);
    await probe.waitForQuiet(REQUEUE_POLL_MS + 1_000);
    kubectl(["annotate", "cocoonset", name, `${ANN_SUSPEND_AFTER_IDLE}-`]);
    const lifted = await waitForSet(
      name,
      "no idle-suspend time",
      (cs) => cs.status?.idleSuspendAt === undefined,
    );
    assert.equal(lifted.status?.idleClockStart, undefined);
    const [, row = ""] = kubectl(["get", "cocoonset", name]).trim().split("\n");
    assert.equal(row.split(/\s+/).length, 5, row);
  });
});
