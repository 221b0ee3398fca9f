// CEL rules that carry the cocoon-webhook checks needing no List into the CRDs, so a cluster without
// the webhook refuses the same specs (docs/migrating.md). The API server applies schema defaults
// before it evaluates these, but every rule still spells the default out so it stays correct for
// objects stored before a default existed.
import type { ValidationRule } from "./openapi.ts";
import { DEFAULT_AGENT_MODE, DEFAULT_BACKEND, DEFAULT_OS, DEFAULT_TOOLBOX_MODE } from "./types.ts";

const NAME_COMPONENT = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*";
const TAG = "[A-Za-z0-9_][A-Za-z0-9._-]{0,127}";

/**
 * ociutil.IsRelativeRef as one regex: the repo part holds no ':', so the first ':' (the split
 * point upstream) starts the tag, and a tag holds no ':' either; "repo:" and ":tag" fail.
 */
export const RELATIVE_REF_PATTERN = `^${NAME_COMPONENT}(?:/${NAME_COMPONENT})*(?::${TAG})?$`;

/** Regex alternatives matching exactly the digit strings of max's length whose value is <= max. */
export function digitsAtMostPattern(max: string): string {
  const alternatives: string[] = [];
  for (let i = 0; i < max.length; i++) {
    const digit = Number(max[i]);
    if (digit === 0) continue;
    const lower = digit === 1 ? "0" : `[0-${digit - 1}]`;
    const rest = max.length - i - 1;
    alternatives.push(`${max.slice(0, i)}${lower}${rest > 0 ? `[0-9]{${rest}}` : ""}`);
  }
  alternatives.push(max);
  return alternatives.join("|");
}

const INT64_MAX = "9223372036854775807";

/**
 * Names Go's strconv.Atoi accepts on 64-bit (the webhook's "purely numeric" test): digits whose value
 * fits int64, leading zeros allowed. Longer numbers overflow Atoi, so upstream admits them.
 */
export const ATOI_NUMBER_PATTERN = `^0*(?:[0-9]{1,${INT64_MAX.length - 1}}|${digitsAtMostPattern(INT64_MAX)})$`;

/** Bounds that keep the CEL cost estimate under the API server's budget. */
export const MAX_TOOLBOXES = 64;
export const MAX_IMAGE_LENGTH = 4096;
export const MAX_TOOLBOX_NAME_LENGTH = 63; // the webhook's DNS-1123 label limit

function orDefault(field: string, fallback: string): string {
  return `(has(self.${field}) ? self.${field} : '${fallback}')`;
}

const isFirecracker = `${orDefault("backend", DEFAULT_BACKEND)} == 'firecracker'`;
const isStatic = "(has(self.mode) && self.mode == 'static')";

/** Rules shared by the agent and every non-static toolbox; defaultMode is that kind's mode default. */
function vmRules(defaultMode: string): ValidationRule[] {
  const mode = orDefault("mode", defaultMode);
  return [
    {
      rule: `!(${isFirecracker}) || ${orDefault("os", DEFAULT_OS)} != 'windows'`,
      message: "firecracker does not support Windows guests",
    },
    {
      rule: `!(${isFirecracker}) || !has(self.image) || !(self.image.startsWith('http://') || self.image.startsWith('https://'))`,
      message: "firecracker requires an OCI image, cloudimg URLs are not supported",
    },
    {
      rule: `!(${isFirecracker}) || ${mode} == 'run'`,
      message: "firecracker does not support clone mode, use mode=run instead",
    },
    {
      rule: `${mode} != 'clone' || !has(self.image) || self.image == '' || self.image.matches('${RELATIVE_REF_PATTERN}')`,
      message: "image must be repo[:tag] when mode is clone (no registry port or digest)",
    },
  ];
}

export const agentRules: ValidationRule[] = vmRules(DEFAULT_AGENT_MODE);

/** Rules on each toolbox; the VM checks skip static toolboxes, which run no local VM. */
export const toolboxRules: ValidationRule[] = [
  {
    rule: `!has(self.name) || !self.name.matches('${ATOI_NUMBER_PATTERN}')`,
    message: "toolbox name must not be purely numeric (conflicts with agent slot naming)",
  },
  {
    rule: `!${isStatic} || (has(self.staticIP) && self.staticIP != '')`,
    message: "staticIP is required when mode=static",
  },
  {
    rule: `!${isStatic} || (has(self.staticVMID) && self.staticVMID != '')`,
    message: "staticVMID is required when mode=static",
  },
  {
    rule: `${isStatic} || (has(self.image) && self.image != '')`,
    message: "image is required when mode is run or clone",
  },
  ...vmRules(DEFAULT_TOOLBOX_MODE).map((r) => ({ ...r, rule: `${isStatic} || ${r.rule}` })),
];

export const toolboxListRules: ValidationRule[] = [
  { rule: "self.all(a, self.exists_one(b, b.name == a.name))", message: "toolbox names must be unique" },
];

const agentBackend = `(has(self.agent.backend) ? self.agent.backend : '${DEFAULT_BACKEND}')`;

/** Rules on the CocoonSet spec that relate the toolboxes to the agent. */
export const cocoonSetSpecRules: ValidationRule[] = [
  {
    rule: `!has(self.toolboxes) || self.toolboxes.all(t, (has(t.mode) && t.mode == 'static') || (has(t.backend) ? t.backend : '${DEFAULT_BACKEND}') == ${agentBackend})`,
    message: "toolbox backend must match spec.agent.backend (static toolboxes excepted)",
  },
];

/** The webhook checks this on CREATE only; optionalOldSelf makes the rule skip every UPDATE. */
export const cocoonHibernationRootRules: ValidationRule[] = [
  {
    rule: "oldSelf.hasValue() || self.metadata.name == self.spec.podRef.name",
    message: "metadata.name must equal spec.podRef.name",
    optionalOldSelf: true,
  },
];
