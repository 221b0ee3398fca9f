// Node built-ins whose ESM import costs resident memory the operator never uses. Importing a built-in
// as an ES module builds its namespace by reading every export, and lazy getters run: node:http's
// `WebSocket` loads the bundled undici, node:util's `transferableAbortSignal` loads worker_threads
// (~5 MiB together, BENCHMARKS.md benchmark 4). process.getBuiltinModule returns the CommonJS
// exports object and leaves the getters alone. Types still come from `import type`.
export const http = process.getBuiltinModule("node:http");
export const https = process.getBuiltinModule("node:https");
export const { isDeepStrictEqual } = process.getBuiltinModule("node:util");
