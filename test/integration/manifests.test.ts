// The install manifests: config/default and config/overlays/sa-key render with kubectl's kustomize
// into the objects docs/installation.md describes (one hardened Deployment, its metrics Service,
// RBAC, the CRDs); the RBAC grants exactly the API calls src/ makes (a new call without a rule fails
// here); and the real authorizer lets the service account make each of them once the rendered RBAC
// is applied. OCI_REGISTRY lives in a kustomize-edited env file, so `kubectl apply -k` never resets
// it; the CRDs use nothing newer than the stated minimum Kubernetes.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { cpSync, globSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import type { ResourceType } from "../../src/controller/resources.ts";
import * as resources from "../../src/controller/resources.ts";
import { controlPlaneBinDir } from "../env/controlplane.ts";
import { apiRequest, testEnv } from "../env/testenv.ts";
import { renderKustomization, renderWithComponents } from "../support/kustomize.ts";

const repoRoot = resolve(import.meta.dirname, "../..");
const GROUP = "cocoonset.cocoonstack.io";
const SA_USER = "system:serviceaccount:cocoon-system:cocoon-operator";
const IMAGE = "ghcr.io/cocoonstack/cocoon-operator-ts:latest";

/** `group resource[/subresource] verb`, the unit RBAC grants. */
type Grant = string;
const grant = (group: string, resource: string, verb: string): Grant => `${group} ${resource} ${verb}`;

/**
 * Every API call the operator makes, and why. The ClusterRole (cluster-wide) and the leader-election
 * Role (cocoon-system) must grant exactly these; the scan of src/ below must find exactly these.
 */
const API_CALLS: { group: string; resource: string; verbs: string[]; namespaced?: "cocoon-system" }[] = [
  // CocoonSet informer; the checkpoint's uncached re-read after its copy; finalizer update;
  // bookkeeping annotation patches; the idle policy's spec.suspend patch and expire-action Delete;
  // pool members created, suspended and deleted by their pool, bound by a claim's update (after a
  // re-read when it lost a race), listed and deleted when the claim goes.
  {
    group: GROUP,
    resource: "cocoonsets",
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
  },
  { group: GROUP, resource: "cocoonsets/status", verbs: ["patch"] },
  // Pods are created with a blockOwnerDeletion ownerReference to their set, pool members to their
  // pool or claim.
  { group: GROUP, resource: "cocoonsets/finalizers", verbs: ["update"] },
  { group: GROUP, resource: "cocoonpools/finalizers", verbs: ["update"] },
  { group: GROUP, resource: "cocoonclaims/finalizers", verbs: ["update"] },
  // CocoonPool and CocoonClaim informers (and the startup probe); finalizer updates.
  { group: GROUP, resource: "cocoonpools", verbs: ["list", "watch", "update"] },
  { group: GROUP, resource: "cocoonpools/status", verbs: ["patch"] },
  { group: GROUP, resource: "cocoonclaims", verbs: ["list", "watch", "update"] },
  { group: GROUP, resource: "cocoonclaims/status", verbs: ["patch"] },
  // CocoonHibernation informer; finalizer update.
  { group: GROUP, resource: "cocoonhibernations", verbs: ["list", "watch", "update"] },
  { group: GROUP, resource: "cocoonhibernations/status", verbs: ["patch"] },
  // CocoonCheckpoint informer (and the startup probe); finalizer update; keep-checkpoints deletes.
  { group: GROUP, resource: "cocooncheckpoints", verbs: ["get", "list", "watch", "update", "delete"] },
  { group: GROUP, resource: "cocooncheckpoints/status", verbs: ["patch"] },
  // CocoonRestore informer (and the startup probe); status patches.
  { group: GROUP, resource: "cocoonrestores", verbs: ["get", "list", "watch"] },
  { group: GROUP, resource: "cocoonrestores/status", verbs: ["patch"] },
  // CocoonGuestPolicy informer (and the startup probe): the operator only reads policies.
  { group: GROUP, resource: "cocoonguestpolicies", verbs: ["list", "watch"] },
  // Pod informer; uncached reads (toolbox collision, wake liveness); creates; annotation patches; deletes.
  { group: "", resource: "pods", verbs: ["get", "list", "watch", "create", "patch", "delete"] },
  // Exec in a pod: the WebSocket upgrade is a GET (get, plus the create check the API server adds),
  // the SPDY fallback a POST (create).
  { group: "", resource: "pods/exec", verbs: ["get", "create"] },
  // The event recorder: new events, and count bumps on repeats.
  { group: "", resource: "events", verbs: ["create", "patch"] },
  // The idle sets' activity Leases, in every namespace: created, then watched.
  { group: "coordination.k8s.io", resource: "leases", verbs: ["list", "watch", "create"] },
  // Leader election, in the operator's own namespace only.
  {
    group: "coordination.k8s.io",
    resource: "leases",
    verbs: ["get", "create", "update"],
    namespaced: "cocoon-system",
  },
];

/** The calls of --metrics-secure (src/controller/metricsauth.ts), granted by its component's ClusterRole. */
const SECURE_METRICS_GRANTS: Grant[] = [
  grant("authentication.k8s.io", "tokenreviews", "create"),
  grant("authorization.k8s.io", "subjectaccessreviews", "create"),
];

function expectedGrants(scope: "cluster" | "cocoon-system"): Set<Grant> {
  const out = new Set<Grant>();
  for (const call of API_CALLS) {
    if ((call.namespaced ?? "cluster") !== scope) continue;
    for (const verb of call.verbs) out.add(grant(call.group, call.resource, verb));
  }
  return out;
}

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are arbitrary YAML
type Obj = any;

let kubectl: string;

const render = renderKustomization;

/** The generated cocoon-operator-config ConfigMap (its name carries kustomize's content hash). */
function configMap(objs: Obj[]): Obj {
  const found = objs.filter(
    (o) => o.kind === "ConfigMap" && o.metadata.name.startsWith("cocoon-operator-config-"),
  );
  assert.equal(found.length, 1, "one cocoon-operator-config ConfigMap");
  return found[0];
}

function find(objs: Obj[], kind: string, name: string): Obj {
  const obj = objs.find((o) => o.kind === kind && o.metadata?.name === name);
  assert.ok(obj, `${kind} ${name} is rendered`);
  return obj;
}

function grantsOf(rules: Obj[]): Set<Grant> {
  const out = new Set<Grant>();
  for (const rule of rules) {
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        for (const verb of rule.verbs) out.add(grant(group, resource, verb));
      }
    }
  }
  return out;
}

/** The ResourceType constants of src/controller/resources.ts, by identifier. */
const resourceTypes = new Map<string, ResourceType>(
  Object.entries(resources).filter(
    (entry): entry is [string, ResourceType] => typeof entry[1] === "object" && "plural" in entry[1],
  ),
);

/** The text of the call whose "(" is at `open`, up to its matching ")". */
function callText(source: string, open: number): string {
  let depth = 0;
  for (let i = open; i < source.length; i++) {
    if (source[i] === "(") depth++;
    if (source[i] === ")" && --depth === 0) return source.slice(open, i + 1);
  }
  throw new Error("unbalanced call");
}

/**
 * Every (group, resource, verb) that src/ asks the API server for: client.<verb>(RESOURCE, …) calls
 * (with `subresource: "status"` when given), list+watch for every informer, and update on the
 * owner's finalizers when pods are built with blockOwnerDeletion. The client itself, the reflector
 * (generic over the informers' resource types) and the optional-kind probe (a LIST of kinds that
 * have informers) are the only places allowed to pass a resource that is not a constant.
 */
function scanSourceForApiCalls(): { cluster: Set<Grant>; leases: Set<Grant>; generic: string[] } {
  const cluster = new Set<Grant>();
  const leases = new Set<Grant>();
  const generic: string[] = [];
  let file = "";
  // Leader election's Lease lives in the operator's namespace; every other call is cluster-wide.
  const add = (rt: ResourceType, verb: string, subresource?: string): void => {
    const resource = subresource ? `${rt.plural}/${subresource}` : rt.plural;
    (file === "src/controller/leaderelection.ts" ? leases : cluster).add(grant(rt.group, resource, verb));
  };
  // The kubectl plugin (src/plugin/) and the SDK it is built on (src/sdk/) call the API with their
  // user's credentials, never the operator's.
  const files = globSync("src/**/*.ts", { cwd: repoRoot }).filter(
    (f) => f !== "src/controller/client.ts" && !f.startsWith("src/plugin/") && !f.startsWith("src/sdk/"),
  );
  for (file of files) {
    const source = readFileSync(join(repoRoot, file), "utf8");
    const calls = /\bclient\.(get|list|create|update|patch|delete|watch)\s*(?:<[^>(]*>)?\(/g;
    for (const match of source.matchAll(calls)) {
      const verb = match[1] ?? "";
      const text = callText(source, match.index + match[0].length - 1);
      const ident = /^\(\s*([A-Za-z_$][\w$]*)/.exec(text)?.[1] ?? "";
      const rt = resourceTypes.get(ident);
      if (!rt) {
        generic.push(`${file}: client.${verb}(${ident}`);
        continue;
      }
      add(rt, verb, /subresource:\s*"status"/.test(text) ? "status" : undefined);
    }
    // Connection upgrades name their verb, resource type and subresource as fields.
    for (const match of source.matchAll(/\bclient\.upgrade\s*\(/g)) {
      const text = callText(source, match.index + match[0].length - 1);
      const verb = /\bverb:\s*"(\w+)"/.exec(text)?.[1] ?? "";
      const rt = resourceTypes.get(/\brt:\s*([A-Z_]+)/.exec(text)?.[1] ?? "");
      const subresource = /\bsubresource:\s*"(\w+)"/.exec(text)?.[1];
      assert.ok(rt && verb, `${file}: client.upgrade names a verb and a known resource type`);
      add(rt, verb, subresource);
    }
    for (const match of source.matchAll(/\bcreateInformer\s*(?:<[^>(]*>)?\(\s*\w+\s*,\s*([A-Z_]+)/g)) {
      const rt = resourceTypes.get(match[1] ?? "");
      assert.ok(rt, `${file}: informer on a known resource type (${match[1]})`);
      add(rt, "list");
      add(rt, "watch");
    }
    if (/blockOwnerDeletion:\s*true/.test(source)) {
      const owners = [
        { rt: resources.COCOONSETS, named: /KIND_COCOONSET\b|kind: "CocoonSet"/ },
        { rt: resources.COCOONPOOLS, named: /KIND_COCOONPOOL\b/ },
        { rt: resources.COCOONCLAIMS, named: /KIND_COCOONCLAIM\b/ },
      ].filter(({ named }) => named.test(source));
      assert.ok(
        owners.length > 0,
        `${file}: blockOwnerDeletion owner is a CocoonSet, CocoonPool or CocoonClaim`,
      );
      for (const { rt } of owners) add(rt, "update", "finalizers");
    }
  }
  return { cluster, leases, generic };
}

describe("install manifests", () => {
  let defaults: Obj[];
  let saKey: Obj[];

  before(() => {
    kubectl = join(controlPlaneBinDir(), "kubectl");
    defaults = render("config/default");
    saKey = render("config/overlays/sa-key");
  });

  it("config/default renders the namespace, the seven CRDs, RBAC, the Deployment, its config and metrics Service, the annotation and bookkeeping policies", () => {
    const names = defaults.map((o) => `${o.kind}/${o.metadata.name}`).sort();
    assert.deepEqual(names, [
      "ClusterRole/cocoon-operator",
      "ClusterRoleBinding/cocoon-operator",
      `ConfigMap/${configMap(defaults).metadata.name}`,
      "CustomResourceDefinition/cocooncheckpoints.cocoonset.cocoonstack.io",
      "CustomResourceDefinition/cocoonclaims.cocoonset.cocoonstack.io",
      "CustomResourceDefinition/cocoonguestpolicies.cocoonset.cocoonstack.io",
      "CustomResourceDefinition/cocoonhibernations.cocoonset.cocoonstack.io",
      "CustomResourceDefinition/cocoonpools.cocoonset.cocoonstack.io",
      "CustomResourceDefinition/cocoonrestores.cocoonset.cocoonstack.io",
      "CustomResourceDefinition/cocoonsets.cocoonset.cocoonstack.io",
      "Deployment/cocoon-operator",
      "Namespace/cocoon-system",
      "Role/cocoon-operator-leader-election",
      "RoleBinding/cocoon-operator-leader-election",
      "Service/cocoon-operator-metrics",
      "ServiceAccount/cocoon-operator",
      "ValidatingAdmissionPolicy/cocoonset-annotations.cocoonstack.io",
      "ValidatingAdmissionPolicy/cocoonset-bookkeeping.cocoonstack.io",
      "ValidatingAdmissionPolicy/cocoonset-pod-bookkeeping.cocoonstack.io",
      "ValidatingAdmissionPolicyBinding/cocoonset-annotations.cocoonstack.io",
      "ValidatingAdmissionPolicyBinding/cocoonset-bookkeeping.cocoonstack.io",
      "ValidatingAdmissionPolicyBinding/cocoonset-pod-bookkeeping.cocoonstack.io",
    ]);
    // The bookkeeping policies let through exactly the service account the Deployment runs as.
    const deploy = find(defaults, "Deployment", "cocoon-operator");
    const account = `system:serviceaccount:${deploy.metadata.namespace}:${deploy.spec.template.spec.serviceAccountName}`;
    for (const name of ["cocoonset-bookkeeping.cocoonstack.io", "cocoonset-pod-bookkeeping.cocoonstack.io"]) {
      assert.deepEqual(find(defaults, "ValidatingAdmissionPolicy", name).spec.matchConditions, [
        { name: "not-the-operator", expression: `request.userInfo.username != '${account}'` },
      ]);
    }
    for (const obj of defaults) {
      const namespaced = ![
        "Namespace",
        "CustomResourceDefinition",
        "ClusterRole",
        "ClusterRoleBinding",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
      ].includes(obj.kind);
      if (namespaced) assert.equal(obj.metadata.namespace, "cocoon-system", `${obj.kind} namespace`);
    }
  });

  it("the CRDs are the generated bases, unchanged", () => {
    for (const file of globSync("config/crd/bases/*.yaml", { cwd: repoRoot })) {
      const base = parse(readFileSync(join(repoRoot, file), "utf8"));
      assert.deepEqual(find(defaults, "CustomResourceDefinition", base.metadata.name), base, file);
    }
  });

  it("the Deployment runs one non-root, read-only, capability-free manager with its probes, ports and resources", () => {
    const deploy = find(defaults, "Deployment", "cocoon-operator");
    const labels = {
      "app.kubernetes.io/name": "cocoon-operator",
      "app.kubernetes.io/component": "controller",
    };
    assert.deepEqual(deploy.metadata.labels, labels);
    assert.equal(deploy.spec.replicas, 1);
    assert.deepEqual(deploy.spec.selector.matchLabels, { "app.kubernetes.io/name": "cocoon-operator" });
    const pod = deploy.spec.template.spec;
    assert.deepEqual(deploy.spec.template.metadata.labels, labels);
    assert.equal(pod.serviceAccountName, "cocoon-operator");
    assert.deepEqual(pod.securityContext, {
      runAsNonRoot: true,
      runAsUser: 1000,
      runAsGroup: 1000,
      seccompProfile: { type: "RuntimeDefault" },
    });
    assert.equal(pod.containers.length, 1);
    const c = pod.containers[0];
    assert.equal(c.name, "manager");
    assert.equal(c.image, IMAGE);
    assert.equal(c.imagePullPolicy, "IfNotPresent");
    assert.deepEqual(c.args, [
      "--metrics-bind-address=:8080",
      "--health-probe-bind-address=:8081",
      "--leader-elect=true",
    ]);
    // No OCI_REGISTRY in env: a value pinned here would undo `kubectl set env` at every apply.
    assert.deepEqual(c.env, [{ name: "OPERATOR_LOG_LEVEL", value: "info" }]);
    assert.deepEqual(c.envFrom, [{ configMapRef: { name: configMap(defaults).metadata.name } }]);
    assert.deepEqual(configMap(defaults).data, { OCI_REGISTRY: "" });
    assert.deepEqual(c.ports, [
      { name: "metrics", containerPort: 8080, protocol: "TCP" },
      { name: "probe", containerPort: 8081, protocol: "TCP" },
    ]);
    assert.deepEqual(c.livenessProbe, {
      httpGet: { path: "/healthz", port: "probe" },
      initialDelaySeconds: 15,
      periodSeconds: 20,
    });
    assert.deepEqual(c.readinessProbe, {
      httpGet: { path: "/readyz", port: "probe" },
      initialDelaySeconds: 5,
      periodSeconds: 10,
    });
    // BENCHMARKS.md: 191 MiB resident with 10k pods cached, 177 MiB peak in the 800-pod scale-up,
    // 3.95 s of CPU over its 28 s (docs/installation.md, "Resources").
    assert.deepEqual(c.resources, {
      requests: { cpu: "150m", memory: "192Mi" },
      limits: { cpu: "1", memory: "512Mi" },
    });
    assert.deepEqual(c.securityContext, {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"] },
    });
  });

  it("the metrics Service selects the operator pod and targets its metrics port", () => {
    const service = find(defaults, "Service", "cocoon-operator-metrics");
    const deploy = find(defaults, "Deployment", "cocoon-operator");
    assert.deepEqual(service.spec.selector, deploy.spec.selector.matchLabels);
    assert.deepEqual(service.spec.ports, [
      { name: "metrics", port: 8080, targetPort: "metrics", protocol: "TCP" },
    ]);
    assert.ok(deploy.spec.template.spec.containers[0].ports.some((p: Obj) => p.name === "metrics"));
  });

  it("the prometheus component adds a ServiceMonitor for that Service and the alerts, and nothing else", () => {
    const withMonitor = renderWithComponents("prometheus");
    const monitor = find(withMonitor, "ServiceMonitor", "cocoon-operator");
    assert.equal(monitor.apiVersion, "monitoring.coreos.com/v1");
    assert.equal(monitor.metadata.namespace, "cocoon-system");
    const service = find(defaults, "Service", "cocoon-operator-metrics");
    assert.deepEqual(monitor.spec.selector, { matchLabels: service.metadata.labels });
    assert.deepEqual(monitor.spec.endpoints, [{ port: "metrics", path: "/metrics", interval: "30s" }]);
    const rule = find(withMonitor, "PrometheusRule", "cocoon-operator");
    assert.equal(rule.metadata.namespace, "cocoon-system");
    assert.deepEqual(
      rule.spec,
      parse(readFileSync(join(repoRoot, "config/components/prometheus/prometheusrule.yaml"), "utf8")).spec,
    );
    assert.deepEqual(
      withMonitor.filter((o) => o.kind !== "ServiceMonitor" && o.kind !== "PrometheusRule"),
      defaults,
    );
  });

  it("the metrics-secure component adds --metrics-secure, the review and reader roles, and an HTTPS ServiceMonitor", () => {
    const secure = renderWithComponents("prometheus", "metrics-secure");
    const deploy = find(secure, "Deployment", "cocoon-operator");
    assert.deepEqual(deploy.spec.template.spec.containers[0].args, [
      "--metrics-bind-address=:8080",
      "--health-probe-bind-address=:8081",
      "--leader-elect=true",
      "--metrics-secure",
    ]);
    const auth = find(secure, "ClusterRole", "cocoon-operator-metrics-auth");
    assert.deepEqual([...grantsOf(auth.rules)].sort(), [...SECURE_METRICS_GRANTS].sort());
    const binding = find(secure, "ClusterRoleBinding", "cocoon-operator-metrics-auth");
    assert.deepEqual(binding.roleRef.name, "cocoon-operator-metrics-auth");
    assert.deepEqual(binding.subjects, [
      { kind: "ServiceAccount", name: "cocoon-operator", namespace: "cocoon-system" },
    ]);
    const reader = find(secure, "ClusterRole", "cocoon-operator-metrics-reader");
    assert.deepEqual(reader.rules, [{ nonResourceURLs: ["/metrics"], verbs: ["get"] }]);
    const [endpoint] = find(secure, "ServiceMonitor", "cocoon-operator").spec.endpoints;
    assert.equal(endpoint.scheme, "https");
    assert.equal(endpoint.bearerTokenFile, "/var/run/secrets/kubernetes.io/serviceaccount/token");
    // Without the prometheus component there is no ServiceMonitor to patch, and the build still works.
    const alone = renderWithComponents("metrics-secure");
    assert.equal(alone.filter((o) => o.kind === "ServiceMonitor").length, 0);
    find(alone, "ClusterRole", "cocoon-operator-metrics-reader");
  });

  it("the sa-key overlay adds only the key Secret mount and GOOGLE_APPLICATION_CREDENTIALS", () => {
    const withoutDeployment = (objs: Obj[]) => objs.filter((o) => o.kind !== "Deployment");
    assert.deepEqual(withoutDeployment(saKey), withoutDeployment(defaults));
    const base = find(defaults, "Deployment", "cocoon-operator");
    const patched = find(saKey, "Deployment", "cocoon-operator");
    const c = patched.spec.template.spec.containers[0];
    // A strategic merge patch puts its list items first; order does not matter for env.
    const byName = (env: Obj[]) => [...env].sort((a, b) => a.name.localeCompare(b.name));
    assert.deepEqual(
      byName(c.env),
      byName([
        ...base.spec.template.spec.containers[0].env,
        { name: "GOOGLE_APPLICATION_CREDENTIALS", value: "/var/run/secrets/gcp/key.json" },
      ]),
    );
    assert.deepEqual(c.volumeMounts, [
      { name: "gcp-ar-writer-key", mountPath: "/var/run/secrets/gcp", readOnly: true },
    ]);
    assert.deepEqual(patched.spec.template.spec.volumes, [
      { name: "gcp-ar-writer-key", secret: { secretName: "cocoon-ar-writer-key" } },
    ]);
    // Everything else in the Deployment is the base's.
    const strip = (d: Obj) => {
      const copy = structuredClone(d);
      delete copy.spec.template.spec.volumes;
      delete copy.spec.template.spec.containers[0].volumeMounts;
      copy.spec.template.spec.containers[0].env = copy.spec.template.spec.containers[0].env.filter(
        (e: Obj) => e.name !== "GOOGLE_APPLICATION_CREDENTIALS",
      );
      return copy;
    };
    assert.deepEqual(strip(patched), base);
  });

  it("the bindings tie both roles to the cocoon-operator service account in cocoon-system", () => {
    const subjects = [{ kind: "ServiceAccount", name: "cocoon-operator", namespace: "cocoon-system" }];
    const crb = find(defaults, "ClusterRoleBinding", "cocoon-operator");
    assert.deepEqual(crb.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: "cocoon-operator",
    });
    assert.deepEqual(crb.subjects, subjects);
    const rb = find(defaults, "RoleBinding", "cocoon-operator-leader-election");
    assert.deepEqual(rb.roleRef, {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "cocoon-operator-leader-election",
    });
    assert.deepEqual(rb.subjects, subjects);
  });

  it("the roles grant exactly the table of API calls, with no wildcards", () => {
    const clusterRole = find(defaults, "ClusterRole", "cocoon-operator");
    const role = find(defaults, "Role", "cocoon-operator-leader-election");
    for (const rule of [...clusterRole.rules, ...role.rules]) {
      for (const list of [rule.apiGroups, rule.resources, rule.verbs]) assert.ok(!list.includes("*"));
    }
    assert.deepEqual([...grantsOf(clusterRole.rules)].sort(), [...expectedGrants("cluster")].sort());
    assert.deepEqual([...grantsOf(role.rules)].sort(), [...expectedGrants("cocoon-system")].sort());
  });

  it("the table is exactly the API calls src/ makes", () => {
    const scanned = scanSourceForApiCalls();
    assert.deepEqual(scanned.generic.map((g) => g.split(":")[0]).sort(), [
      "src/controller/reflector.ts",
      "src/controller/reflector.ts",
      "src/controller/served.ts",
    ]);
    assert.deepEqual(
      [...scanned.cluster].sort(),
      [...expectedGrants("cluster"), ...SECURE_METRICS_GRANTS].sort(),
      "a call in src/ without a row in API_CALLS (and a rule in config/rbac), or a row nothing calls",
    );
    assert.deepEqual([...scanned.leases].sort(), [...expectedGrants("cocoon-system")].sort());
  });
});

describe("the rendered RBAC on a real API server", () => {
  const env = testEnv();

  async function allowed(attrs: Record<string, string>): Promise<boolean> {
    const res = await apiRequest(env, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", {
      apiVersion: "authorization.k8s.io/v1",
      kind: "SubjectAccessReview",
      spec: {
        user: SA_USER,
        groups: ["system:serviceaccounts", "system:serviceaccounts:cocoon-system", "system:authenticated"],
        resourceAttributes: attrs,
      },
    });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.status.allowed === true;
  }

  function attributes(group: string, resource: string, verb: string, namespace: string) {
    const [plural = "", subresource] = resource.split("/");
    return { group, resource: plural, verb, namespace, ...(subresource ? { subresource } : {}) };
  }

  before(() => {
    kubectl ??= join(controlPlaneBinDir(), "kubectl");
    const run = (...args: string[]) =>
      execFileSync(kubectl, ["--kubeconfig", env.kubeconfigPath, ...args], { encoding: "utf8" });
    // Idempotent, so a second run against a sandbox is fine.
    run("apply", "-f", join(repoRoot, "config/default/namespace.yaml"));
    run("apply", "-k", join(repoRoot, "config/rbac"));
  });

  it("the service account may make every call in the table", async () => {
    for (const call of API_CALLS) {
      for (const verb of call.verbs) {
        const namespace = call.namespaced ?? "some-tenant";
        assert.ok(
          await allowed(attributes(call.group, call.resource, verb, namespace)),
          `${SA_USER} may ${verb} ${call.resource} in ${namespace}`,
        );
      }
    }
  });

  it("and nothing beyond it", async () => {
    const denied = [
      attributes(GROUP, "cocoonhibernations", "delete", "some-tenant"),
      attributes(GROUP, "cocoonpools", "delete", "some-tenant"),
      attributes(GROUP, "cocoonhibernations", "patch", "some-tenant"),
      attributes(GROUP, "cocoonguestpolicies", "get", "some-tenant"),
      attributes(GROUP, "cocoonguestpolicies", "update", "some-tenant"),
      attributes("", "pods", "update", "some-tenant"),
      attributes("", "pods/status", "patch", "some-tenant"),
      attributes("", "secrets", "get", "cocoon-system"),
      attributes("", "configmaps", "create", "cocoon-system"),
      attributes("coordination.k8s.io", "leases", "update", "some-tenant"),
      attributes("coordination.k8s.io", "leases", "delete", "cocoon-system"),
    ];
    for (const attrs of denied) {
      assert.equal(
        await allowed(attrs),
        false,
        `${attrs.verb} ${attrs.resource} in ${attrs.namespace} is denied`,
      );
    }
  });
});

describe("kubectl apply -k and OCI_REGISTRY", () => {
  const env = testEnv();
  let dir: string;
  const configMaps = new Set<string>();
  const run = (...args: string[]) =>
    execFileSync(kubectl, ["--kubeconfig", env.kubeconfigPath, ...args], { encoding: "utf8" });
  const deployment = (): Obj =>
    JSON.parse(run("-n", "cocoon-system", "get", "deploy/cocoon-operator", "-o", "json"));
  const registryOf = (deploy: Obj): { env?: string; configMap?: string } => {
    const c = deploy.spec.template.spec.containers[0];
    const name = c.envFrom?.[0]?.configMapRef?.name;
    if (name) configMaps.add(name);
    const data = name
      ? JSON.parse(run("-n", "cocoon-system", "get", "configmap", name, "-o", "json")).data
      : undefined;
    return { env: c.env.find((e: Obj) => e.name === "OCI_REGISTRY")?.value, configMap: data?.OCI_REGISTRY };
  };
  const applyWith = (registry: string) => {
    writeFileSync(join(dir, "config/default/operator.env"), `OCI_REGISTRY=${registry}\n`);
    run("apply", "-k", join(dir, "config/default"));
  };

  before(() => {
    kubectl ??= join(controlPlaneBinDir(), "kubectl");
    // A copy, so the test edits operator.env as a user would without touching the checkout.
    dir = mkdtempSync(join(tmpdir(), "cocoon-install-"));
    cpSync(join(repoRoot, "config"), join(dir, "config"), { recursive: true });
    // Without the admission policies: bound cluster-wide they would judge the other test files' sets on
    // this shared API server (annotation-policy.test.ts and bookkeeping-policy.test.ts apply them to
    // one namespace).
    const kustomization = join(dir, "config/default/kustomization.yaml");
    const withPolicy = readFileSync(kustomization, "utf8");
    assert.match(withPolicy, /\n {2}- \.\.\/policy\n/);
    writeFileSync(kustomization, withPolicy.replace(/\n {2}- \.\.\/policy\n/, "\n"));
  });

  after(() => {
    run("-n", "cocoon-system", "delete", "deploy/cocoon-operator", "--ignore-not-found");
    if (configMaps.size > 0)
      run("-n", "cocoon-system", "delete", "configmap", "--ignore-not-found", ...configMaps);
    rmSync(dir, { recursive: true, force: true });
  });

  it("takes the value from operator.env, and a re-apply keeps a value set with kubectl set env", () => {
    applyWith("registry.example/first");
    assert.deepEqual(registryOf(deployment()), { env: undefined, configMap: "registry.example/first" });

    run(
      "-n",
      "cocoon-system",
      "set",
      "env",
      "deploy/cocoon-operator",
      "OCI_REGISTRY=registry.example/by-hand",
    );
    applyWith("registry.example/first");
    assert.deepEqual(registryOf(deployment()), {
      env: "registry.example/by-hand",
      configMap: "registry.example/first",
    });

    run("-n", "cocoon-system", "set", "env", "deploy/cocoon-operator", "OCI_REGISTRY-");
    applyWith("registry.example/second");
    assert.deepEqual(registryOf(deployment()), { env: undefined, configMap: "registry.example/second" });
  });
});

/**
 * Fields of a CRD (as `path.key`) and the first Kubernetes minor that accepts them by default. A
 * field missing here fails the test below: find its release, then raise the documented minimum if
 * it is newer.
 */
const CRD_FEATURES: Record<string, { since: string; why: string }> = {
  "x-kubernetes-validations.rule": {
    since: "1.25",
    why: "CustomResourceValidationExpressions beta, on by default",
  },
  "x-kubernetes-validations.message": { since: "1.25", why: "CustomResourceValidationExpressions beta" },
  "x-kubernetes-validations.messageExpression": { since: "1.27", why: "added with the rules' beta in 1.27" },
  "x-kubernetes-validations.reason": { since: "1.28", why: "added in 1.28" },
  "x-kubernetes-validations.fieldPath": { since: "1.28", why: "added in 1.28" },
  "x-kubernetes-validations.optionalOldSelf": {
    since: "1.30",
    why: "CRDValidationRatcheting: alpha 1.28, beta and on by default 1.30, GA 1.33; with the gate off the API server drops the field and `oldSelf.hasValue()` no longer compiles",
  },
  "spec.versions.selectableFields": {
    since: "1.31",
    why: "CustomResourceFieldSelectors beta, on by default",
  },
};

function crdFeatures(crd: Obj): Set<string> {
  const used = new Set<string>();
  const walk = (schema: Obj): void => {
    if (!schema || typeof schema !== "object") return;
    for (const validation of schema["x-kubernetes-validations"] ?? []) {
      for (const key of Object.keys(validation)) used.add(`x-kubernetes-validations.${key}`);
    }
    for (const child of Object.values(schema.properties ?? {})) walk(child);
    walk(schema.items);
    if (typeof schema.additionalProperties === "object") walk(schema.additionalProperties);
  };
  for (const version of crd.spec.versions) {
    walk(version.schema.openAPIV3Schema);
    if (version.selectableFields) used.add("spec.versions.selectableFields");
  }
  return used;
}

const minor = (version: string) => Number(version.split(".")[1]);

describe("the minimum Kubernetes version", () => {
  it("docs/installation.md states the newest release any CRD field needs", () => {
    const doc = readFileSync(join(repoRoot, "docs/installation.md"), "utf8");
    const stated = /Kubernetes (1\.\d+) or newer/.exec(doc)?.[1];
    assert.ok(stated, "docs/installation.md states `Kubernetes 1.N or newer`");
    let newest = "1.16";
    const needs: string[] = [];
    for (const file of globSync("config/crd/bases/*.yaml", { cwd: repoRoot })) {
      for (const feature of crdFeatures(parse(readFileSync(join(repoRoot, file), "utf8")))) {
        const known = CRD_FEATURES[feature];
        assert.ok(known, `${file} uses ${feature}: add the release that accepts it to CRD_FEATURES`);
        needs.push(`${feature} ${known.since}`);
        if (minor(known.since) > minor(newest)) newest = known.since;
      }
    }
    assert.ok(needs.includes("x-kubernetes-validations.optionalOldSelf 1.30"), needs.join(", "));
    assert.equal(stated, newest, `the CRDs need ${newest}: ${[...new Set(needs)].join(", ")}`);
  });
});
