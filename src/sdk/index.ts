// The SDK's public surface (docs/sdk.md): the client, the group, the errors and their types.

export {
  type BranchOptions,
  type ClaimOptions,
  type ClientSeams,
  CocoonClient,
  type ConnectOptions,
  type CreateSpec,
} from "./client.ts";
export {
  CocoonError,
  CocoonNotFoundError,
  CocoonOperationError,
  CocoonTimeoutError,
  type Warning,
} from "./errors.ts";
export type { ExecOptions, ExecResult, ReadFileOptions, WriteFileOptions } from "./files.ts";
export { AgentGroup, type Member, type OperationOptions } from "./group.ts";
