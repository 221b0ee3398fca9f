// prom-client's metric classes, each from its own file rather than the package index: the index also
// loads the default collectors, the push gateway and the cluster aggregator, and through them
// @opentelemetry/api (~2 MiB resident at start for code the operator never runs; BENCHMARKS.md,
// benchmark 4). The classes are the index's own (the index re-exports these files); types come from it.
import { createRequire } from "node:module";
import type * as prom from "prom-client";

const require = createRequire(import.meta.url);

export const Counter: typeof prom.Counter = require("prom-client/lib/counter");
export type Counter<T extends string = string> = prom.Counter<T>;
export const Gauge: typeof prom.Gauge = require("prom-client/lib/gauge");
export type Gauge<T extends string = string> = prom.Gauge<T>;
export const Histogram: typeof prom.Histogram = require("prom-client/lib/histogram");
export type Histogram<T extends string = string> = prom.Histogram<T>;
export const Registry: typeof prom.Registry = require("prom-client/lib/registry");
export type Registry = prom.Registry;
export const {
  exponentialBuckets,
}: { exponentialBuckets: typeof prom.exponentialBuckets } = require("prom-client/lib/bucketGenerators");
