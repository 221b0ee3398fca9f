// Command-line options and teardown: everything a benchmark starts registers its stop here, and the
// stops run on a normal end, on an error, and on SIGINT / SIGTERM, so no process outlives the run.

const cleanups: (() => Promise<void> | void)[] = [];
let tearingDown: Promise<void> | undefined;

/** Registers a stop; stops run last-registered first. Returns a function that runs it early. */
export function onTeardown(stop: () => Promise<void> | void): () => Promise<void> {
  let done = false;
  const once = async () => {
    if (done) return;
    done = true;
    await stop();
  };
  cleanups.push(once);
  return once;
}

export function teardown(): Promise<void> {
  tearingDown ??= (async () => {
    while (cleanups.length > 0) {
      const stop = cleanups.pop();
      try {
        await stop?.();
      } catch (err) {
        process.stderr.write(`teardown: ${(err as Error).message}\n`);
      }
    }
  })();
  return tearingDown;
}

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    process.stderr.write(`${signal}: tearing down\n`);
    void teardown().finally(() => process.exit(130));
  });
}

/** Runs a benchmark's main; tears down after it whatever happens and sets the exit code. */
export function runBenchmark(main: () => Promise<void>): void {
  const fail = (err: unknown) => {
    process.stderr.write(`benchmark failed: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exitCode = 1;
  };
  process.on("uncaughtException", (err) => {
    fail(err);
    void teardown().finally(() => process.exit(1));
  });
  void (async () => {
    await main().catch(fail);
    await teardown();
    // Open keep-alive sockets or stray timers must not hold the process.
    setTimeout(() => process.exit(process.exitCode ?? 0), 200).unref();
  })();
}

export interface Args {
  /** `--name value` or `--name=value`. */
  string(name: string, fallback: string): string;
  int(name: string, fallback: number): number;
  list(name: string, fallback: readonly number[]): number[];
}

export function parseArgs(argv: readonly string[] = process.argv.slice(2)): Args {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (!arg.startsWith("--")) throw new Error(`unexpected argument ${arg}`);
    const eq = arg.indexOf("=");
    if (eq > 0) {
      values.set(arg.slice(2, eq), arg.slice(eq + 1));
    } else {
      const next = argv[i + 1];
      if (next === undefined) throw new Error(`${arg} needs a value`);
      values.set(arg.slice(2), next);
      i++;
    }
  }
  return {
    string: (name, fallback) => values.get(name) ?? fallback,
    int: (name, fallback) => {
      const raw = values.get(name);
      if (raw === undefined) return fallback;
      const n = Number.parseInt(raw, 10);
      if (!Number.isFinite(n) || n < 1) throw new Error(`--${name} must be a positive integer`);
      return n;
    },
    list: (name, fallback) => {
      const raw = values.get(name);
      if (raw === undefined) return [...fallback];
      return raw.split(",").map((v) => {
        const n = Number.parseInt(v, 10);
        if (!Number.isFinite(n) || n < 1) throw new Error(`--${name} must list positive integers`);
        return n;
      });
    },
  };
}
