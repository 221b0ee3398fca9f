// The process_* families every Prometheus client exports (same names as prom-client's and Go's
// process collector) and the Node heap gauges, read on each scrape. prom-client's
// collectDefaultMetrics is not used: its CPU collector loads @opentelemetry/api at import, which
// alone adds ~7 MiB to the resident set (BENCHMARKS.md, benchmark 4).

import { readdirSync, readFileSync } from "node:fs";
import { Counter, Gauge, type Registry } from "./prom.ts";

/** Fields of /proc/self/status in bytes (Linux); empty elsewhere. */
function procStatus(): Map<string, number> {
  const fields = new Map<string, number>();
  try {
    for (const line of readFileSync("/proc/self/status", "utf8").split("\n")) {
      const match = /^(\w+):\s+(\d+) kB$/.exec(line);
      if (match) fields.set(match[1] as string, Number(match[2]) * 1024);
    }
  } catch {}
  return fields;
}

function openFds(): number | undefined {
  try {
    return readdirSync("/proc/self/fd").length - 1;
  } catch {
    return undefined;
  }
}

function maxFds(): number | undefined {
  try {
    const line = readFileSync("/proc/self/limits", "utf8")
      .split("\n")
      .find((l) => l.startsWith("Max open files"));
    const soft = line?.split(/\s{2,}/)[1];
    return soft && /^\d+$/.test(soft) ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

/** IpExt InOctets / OutOctets of /proc/self/net/netstat: the network namespace's bytes, as Go reports. */
function networkOctets(): { received: number; sent: number } | undefined {
  let netstat = "";
  try {
    netstat = readFileSync("/proc/self/net/netstat", "utf8");
  } catch {}
  const lines = netstat.split("\n").filter((l) => l.startsWith("IpExt:"));
  const [names, values] = lines.map((l) => l.split(/\s+/).slice(1));
  if (!names || !values) return undefined;
  const field = (name: string) => Number(values[names.indexOf(name)]);
  const octets = { received: field("InOctets"), sent: field("OutOctets") };
  return Number.isFinite(octets.received) && Number.isFinite(octets.sent) ? octets : undefined;
}

/** Max address space of /proc/self/limits; procfs reads "unlimited" as the largest uint64. */
function maxVirtualMemory(): number | undefined {
  try {
    const limit = /^Max address space\s+(\S+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1];
    if (limit === undefined) return undefined;
    return limit === "unlimited" ? 2 ** 64 : Number(limit);
  } catch {
    return undefined;
  }
}

/** A counter that reports a running total read at scrape time. */
function totalCounter(registry: Registry, name: string, help: string, read: () => number): void {
  let reported = 0;
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      const now = read();
      if (now > reported) this.inc(now - reported);
      reported = Math.max(reported, now);
    },
  });
}

export function registerProcessMetrics(registry: Registry): void {
  const cpu = () => process.cpuUsage();
  totalCounter(
    registry,
    "process_cpu_user_seconds_total",
    "Total user CPU time spent in seconds.",
    () => cpu().user / 1e6,
  );
  totalCounter(
    registry,
    "process_cpu_system_seconds_total",
    "Total system CPU time spent in seconds.",
    () => cpu().system / 1e6,
  );
  totalCounter(
    registry,
    "process_cpu_seconds_total",
    "Total user and system CPU time spent in seconds.",
    () => {
      const { user, system } = cpu();
      return (user + system) / 1e6;
    },
  );
  const gauge = (name: string, help: string, read: () => number | undefined) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const value = read();
        if (value !== undefined) this.set(value);
      },
    });
  const startTime = Math.round(Date.now() / 1000 - process.uptime());
  gauge(
    "process_start_time_seconds",
    "Start time of the process since unix epoch in seconds.",
    () => startTime,
  );
  gauge("process_resident_memory_bytes", "Resident memory size in bytes.", () => procStatus().get("VmRSS"));
  gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.", () => procStatus().get("VmSize"));
  gauge("process_heap_bytes", "Process heap size in bytes.", () => procStatus().get("VmData"));
  // The two families Go's process collector adds on Linux (test/fixtures/go-operator-metrics.json).
  gauge(
    "process_virtual_memory_max_bytes",
    "Maximum amount of virtual memory available in bytes.",
    maxVirtualMemory,
  );
  totalCounter(
    registry,
    "process_network_receive_bytes_total",
    "Number of bytes received by the process over the network.",
    () => networkOctets()?.received ?? 0,
  );
  totalCounter(
    registry,
    "process_network_transmit_bytes_total",
    "Number of bytes sent by the process over the network.",
    () => networkOctets()?.sent ?? 0,
  );
  gauge("process_open_fds", "Number of open file descriptors.", openFds);
  gauge("process_max_fds", "Maximum number of open file descriptors.", maxFds);
  gauge(
    "nodejs_heap_size_total_bytes",
    "Process heap size from Node.js in bytes.",
    () => process.memoryUsage().heapTotal,
  );
  gauge(
    "nodejs_heap_size_used_bytes",
    "Process heap size used from Node.js in bytes.",
    () => process.memoryUsage().heapUsed,
  );
  gauge(
    "nodejs_external_memory_bytes",
    "Node.js external memory size in bytes.",
    () => process.memoryUsage().external,
  );
  const [major, minor, patch] = process.versions.node.split(".").map(Number);
  new Gauge({
    name: "nodejs_version_info",
    help: "Node.js version info.",
    labelNames: ["version", "major", "minor", "patch"],
    registers: [registry],
  }).set({ version: process.version, major, minor, patch }, 1);
}
