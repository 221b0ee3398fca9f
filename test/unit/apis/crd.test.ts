import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import type { JSONSchemaProps, ValidationRule } from "../../../src/apis/v1/openapi.ts";
import { renderCRDs } from "../../../src/apis/v1/render.ts";
import { cocoonHibernationCRD, cocoonSetCRD } from "../../../src/apis/v1/schema.ts";
import type { CocoonHibernation, CocoonSet } from "../../../src/apis/v1/types.ts";
import { referenceCrdsDir } from "../../support/shared.ts";

const root = join(import.meta.dirname, "..", "..", "..");
const referenceDir = referenceCrdsDir;

/** Flattens a JSON value into path → leaf; x-kubernetes-validations become one entry per rule. */
function flatten(value: unknown, path: string, out: Map<string, unknown>): Map<string, unknown> {
  if (Array.isArray(value)) {
    if (path.endsWith(".x-kubernetes-validations")) {
      for (const rule of value as ValidationRule[]) out.set(`${path}[${rule.message}]`, rule);
    } else if (value.length === 0) {
      out.set(path, []);
    } else {
      value.forEach((item, i) => {
        flatten(item, `${path}[${i}]`, out);
      });
    }
  } else if (value !== null && typeof value === "object") {
    const entries = Object.entries(value);
    if (entries.length === 0) out.set(path, {});
    for (const [key, child] of entries) flatten(child, path === "" ? key : `${path}.${key}`, out);
  } else {
    out.set(path, value);
  }
  return out;
}

const schemaPrefix = "spec.versions[0].schema.openAPIV3Schema";
const toolboxItem = `${schemaPrefix}.properties.spec.properties.toolboxes.items`;
const agentPath = `${schemaPrefix}.properties.spec.properties.agent`;
const statusPath = `${schemaPrefix}.properties.status`;

/** What ours adds over the reference: the webhook rules in CEL and the bounds their cost needs. */
const expectedExtras: Record<string, string[]> = {
  "cocoonsets.cocoonset.cocoonstack.io": [
    `${agentPath}.properties.image.maxLength`,
    `${agentPath}.x-kubernetes-validations[firecracker does not support Windows guests]`,
    `${agentPath}.x-kubernetes-validations[firecracker requires an OCI image, cloudimg URLs are not supported]`,
    `${agentPath}.x-kubernetes-validations[firecracker does not support clone mode, use mode=run instead]`,
    `${agentPath}.x-kubernetes-validations[image must be repo[:tag] when mode is clone (no registry port or digest)]`,
    `${schemaPrefix}.properties.spec.properties.toolboxes.maxItems`,
    `${schemaPrefix}.properties.spec.properties.toolboxes.x-kubernetes-validations[toolbox names must be unique]`,
    `${toolboxItem}.properties.image.maxLength`,
    `${toolboxItem}.properties.name.maxLength`,
    `${toolboxItem}.x-kubernetes-validations[toolbox name must not be purely numeric (conflicts with agent slot naming)]`,
    `${toolboxItem}.x-kubernetes-validations[staticIP is required when mode=static]`,
    `${toolboxItem}.x-kubernetes-validations[staticVMID is required when mode=static]`,
    `${toolboxItem}.x-kubernetes-validations[image is required when mode is run or clone]`,
    `${toolboxItem}.x-kubernetes-validations[firecracker does not support Windows guests]`,
    `${toolboxItem}.x-kubernetes-validations[firecracker requires an OCI image, cloudimg URLs are not supported]`,
    `${toolboxItem}.x-kubernetes-validations[firecracker does not support clone mode, use mode=run instead]`,
    `${toolboxItem}.x-kubernetes-validations[image must be repo[:tag] when mode is clone (no registry port or digest)]`,
    `${schemaPrefix}.properties.spec.x-kubernetes-validations[toolbox backend must match spec.agent.backend (static toolboxes excepted)]`,
    // The idle and expiry policy's status fields and their printer column (docs/idle.md).
    ...["expireAt", "expiryNoticedAt", "idleClockStart", "idleSuspendAt", "idleSuspendNoticedFor"].flatMap(
      (field) => ["description", "format", "type"].map((key) => `${statusPath}.properties.${field}.${key}`),
    ),
    ...["jsonPath", "name", "type"].map((key) => `spec.versions[0].additionalPrinterColumns[4].${key}`),
  ],
  "cocoonhibernations.cocoonset.cocoonstack.io": [
    `${schemaPrefix}.x-kubernetes-validations[metadata.name must equal spec.podRef.name]`,
  ],
};

/** controller-gen stamps its own version; a CRD not made by controller-gen must not claim to be. */
const ignoredReferencePaths = new Set(["metadata.annotations.controller-gen.kubebuilder.io/version"]);

describe("CRD YAML", () => {
  it("committed config/crd/bases files equal the generated output", async () => {
    for (const { file, yaml } of renderCRDs()) {
      const committed = await readFile(join(root, "config", "crd", "bases", file), "utf8");
      assert.equal(committed, yaml, `${file} is stale: run npm run gen:crds`);
    }
  });

  for (const { file } of renderCRDs()) {
    it(`${file} is a superset of the reference CRD`, async () => {
      const reference = parse(await readFile(join(referenceDir, file), "utf8")) as {
        metadata: { name: string };
      };
      const ours = parse(await readFile(join(root, "config", "crd", "bases", file), "utf8"));
      const refPaths = flatten(reference, "", new Map());
      const ourPaths = flatten(ours, "", new Map());
      for (const [path, value] of refPaths) {
        if (ignoredReferencePaths.has(path)) continue;
        assert.ok(ourPaths.has(path), `missing ${path}`);
        if (path.endsWith(".description")) {
          assert.ok(typeof ourPaths.get(path) === "string" && ourPaths.get(path) !== "", `empty ${path}`);
        } else {
          assert.deepEqual(ourPaths.get(path), value, `differs at ${path}`);
        }
      }
      const extras = [...ourPaths.keys()].filter((p) => !refPaths.has(p));
      assert.deepEqual(extras.sort(), [...(expectedExtras[reference.metadata.name] ?? [])].sort());
    });
  }
});

const quantity = "1Gi";
const condition = {
  type: "Ready",
  status: "True",
  observedGeneration: 1,
  lastTransitionTime: "2024-01-01T00:00:00Z",
  reason: "AllAgentsReady",
  message: "ok",
} as const;
const resources = {
  limits: { cpu: quantity },
  requests: { memory: quantity },
  claims: [{ name: "gpu", request: "one" }],
};
const vmOptions = {
  os: "linux",
  backend: "cloud-hypervisor",
  connType: "ssh",
  network: "net",
  forcePull: true,
  noDirectIO: true,
  probePort: 22,
  storage: quantity,
  resources,
};

/** Every optional field set: a field added to types.ts but not the schema (or back) fails below. */
const fullCocoonSet: CocoonSet = {
  apiVersion: "cocoonset.cocoonstack.io/v1",
  kind: "CocoonSet",
  metadata: { name: "demo" },
  spec: {
    suspend: false,
    snapshotPolicy: "always",
    hibernatePolicy: "retain",
    nodePool: "default",
    snapshotCompatibilityClass: "n2-cascade-lake-v1",
    nodeName: "node-1",
    agent: {
      ...vmOptions,
      replicas: 1,
      image: "ubuntu:24.04",
      mode: "clone",
      envFrom: [
        {
          prefix: "P_",
          configMapRef: { name: "cm", optional: true },
          secretRef: { name: "s", optional: false },
        },
      ],
      serviceAccountName: "sa",
    },
    toolboxes: [
      {
        ...vmOptions,
        name: "tools",
        image: "tools:1",
        mode: "static",
        staticIP: "10.0.0.1",
        staticVMID: "vm-1",
        vncPort: 5900,
      },
    ],
  },
  status: {
    observedGeneration: 1,
    phase: "Running",
    readyAgents: 1,
    desiredAgents: 1,
    readyToolboxes: 1,
    desiredToolboxes: 1,
    agents: [
      {
        slot: 0,
        role: "main",
        podName: "p",
        vmName: "v",
        vmID: "id",
        ip: "10.0.0.2",
        phase: "Running",
        forkedFrom: "x",
      },
    ],
    toolboxes: [
      {
        name: "tools",
        podName: "p",
        vmName: "v",
        vmID: "id",
        ip: "10.0.0.1",
        phase: "Running",
        connType: "vnc",
        vncPort: 5900,
      },
    ],
    conditions: [condition],
    idleClockStart: "2024-01-01T00:00:00Z",
    idleSuspendAt: "2024-01-01T00:30:00Z",
    expireAt: "2024-01-02T00:00:00Z",
    expiryNoticedAt: "2024-01-01T23:50:00Z",
    idleSuspendNoticedFor: "2024-01-01T00:30:00Z",
  },
};

const fullCocoonHibernation: CocoonHibernation = {
  apiVersion: "cocoonset.cocoonstack.io/v1",
  kind: "CocoonHibernation",
  metadata: { name: "demo-0" },
  spec: { podRef: { name: "demo-0" }, desire: "Hibernate" },
  status: { observedGeneration: 1, phase: "Hibernated", vmName: "v", conditions: [condition] },
};

/** Paths of the object's fields that the schema does not declare (metadata is schemaless). */
function undeclaredFields(value: unknown, schema: JSONSchemaProps, path: string): string[] {
  if (Array.isArray(value)) {
    return value.flatMap((item, i) =>
      schema.items ? undeclaredFields(item, schema.items, `${path}[${i}]`) : [path],
    );
  }
  if (value === null || typeof value !== "object" || path === "metadata") return [];
  return Object.entries(value).flatMap(([key, child]) => {
    const childPath = path === "" ? key : `${path}.${key}`;
    const childSchema = schema.properties?.[key] ?? schema.additionalProperties;
    return childSchema ? undeclaredFields(child, childSchema, childPath) : [childPath];
  });
}

/** Paths of schema properties that the object leaves unset. */
function unsetProperties(value: unknown, schema: JSONSchemaProps, path: string): string[] {
  if (schema.items) {
    const first = Array.isArray(value) ? value[0] : undefined;
    return first === undefined ? [path] : unsetProperties(first, schema.items, `${path}[0]`);
  }
  return Object.entries(schema.properties ?? {}).flatMap(([key, child]) => {
    const field = (value as Record<string, unknown> | undefined)?.[key];
    return field === undefined ? [`${path}.${key}`] : unsetProperties(field, child, `${path}.${key}`);
  });
}

describe("TypeScript types and schema agree", () => {
  const cases = [
    { kind: "CocoonSet", object: fullCocoonSet, crd: cocoonSetCRD },
    { kind: "CocoonHibernation", object: fullCocoonHibernation, crd: cocoonHibernationCRD },
  ];
  for (const { kind, object, crd } of cases) {
    const schema = crd.spec.versions[0]?.schema.openAPIV3Schema;
    assert.ok(schema);
    it(`${kind}: every field of the typed object is in the schema`, () => {
      assert.deepEqual(undeclaredFields(object, schema, ""), []);
    });
    it(`${kind}: every spec and status property of the schema is set in the typed object`, () => {
      for (const part of ["spec", "status"] as const) {
        const partSchema: JSONSchemaProps | undefined = schema.properties?.[part];
        assert.ok(partSchema);
        assert.deepEqual(unsetProperties(object[part], partSchema, part), []);
      }
    });
  }
});
