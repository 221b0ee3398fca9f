// Plain-JSON shapes of apiextensions.k8s.io/v1 CustomResourceDefinition, keyed exactly as they
// are serialised (the client-node model classes rename keys such as x-kubernetes-validations).

export interface ValidationRule {
  rule: string;
  message: string;
  /** Evaluate the transition rule on CREATE too, with oldSelf an empty optional. */
  optionalOldSelf?: boolean;
}

export interface JSONSchemaProps {
  type?: "object" | "array" | "string" | "integer" | "boolean" | "number";
  description?: string;
  format?: string;
  default?: unknown;
  enum?: string[];
  pattern?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  required?: string[];
  properties?: Record<string, JSONSchemaProps>;
  additionalProperties?: JSONSchemaProps;
  items?: JSONSchemaProps;
  anyOf?: JSONSchemaProps[];
  "x-kubernetes-int-or-string"?: boolean;
  "x-kubernetes-list-type"?: "atomic" | "set" | "map";
  "x-kubernetes-list-map-keys"?: string[];
  "x-kubernetes-map-type"?: "atomic" | "granular";
  "x-kubernetes-validations"?: ValidationRule[];
}

export interface PrinterColumn {
  name: string;
  type: "string" | "integer" | "boolean" | "date";
  jsonPath: string;
}

export interface CustomResourceDefinition {
  apiVersion: "apiextensions.k8s.io/v1";
  kind: "CustomResourceDefinition";
  metadata: { name: string };
  spec: {
    group: string;
    names: {
      kind: string;
      listKind: string;
      plural: string;
      singular: string;
      shortNames: string[];
      categories: string[];
    };
    scope: "Namespaced";
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      additionalPrinterColumns: PrinterColumn[];
      subresources: {
        status?: Record<string, never>;
        scale?: { specReplicasPath: string; statusReplicasPath: string; labelSelectorPath?: string };
      };
      schema: { openAPIV3Schema: JSONSchemaProps };
    }[];
  };
}
