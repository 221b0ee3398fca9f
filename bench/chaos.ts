// `npm run bench:chaos [-- --kills=N --seed=S]`: the reliability suite's random-kill run at full
// length (200 SIGKILLs by default) on its own control plane and registry. Prints the seed, the counts
// and any invariant violation with the history that led to it; exits 1 on a violation.

import { randomInt } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { startEnvironment } from "../test/env/environment.ts";
import { runChaos } from "../test/reliability/chaos.ts";

function flag(name: string): string | undefined {
  const prefix = `--${name}=`;
  return process.argv.find((a) => a.startsWith(prefix))?.slice(prefix.length);
}

const kills = Number(flag("kills") ?? 200);
const seed = Number(flag("seed") ?? process.env.CHAOS_SEED ?? randomInt(2 ** 31));
const repoRoot = resolve(import.meta.dirname, "..");
const envFile = join(repoRoot, ".testenv", `env-${process.pid}.json`);

const environment = await startEnvironment();
let code = 0;
try {
  mkdirSync(join(repoRoot, ".testenv"), { recursive: true });
  writeFileSync(envFile, JSON.stringify(environment.info));
  process.stdout.write(`bench:chaos: seed=${seed} kills=${kills}\n`);
  const started = Date.now();
  const result = await runChaos({
    env: environment.info,
    kills,
    seed,
    log: (line) => process.stdout.write(`${line}\n`),
  });
  const { counts } = result.checker;
  process.stdout.write(
    `bench:chaos: seed=${seed} kills=${result.kills} cycles=${JSON.stringify(result.cycles)} ` +
      `vmEvents=${counts.vmEvents} tagDeletes=${counts.tagDeletes} liveDestroys(teardown)=${counts.liveDestroys} ` +
      `unexpectedExits=${result.unexpectedExits} violations=${result.checker.violations.length} ` +
      `wall=${Math.round((Date.now() - started) / 1000)}s\n`,
  );
  for (const v of result.checker.violations) process.stdout.write(`${v}\n`);
  if (result.checker.violations.length > 0 || result.unexpectedExits > 0) code = 1;
} catch (err) {
  process.stderr.write(`bench:chaos: ${(err as Error).stack ?? err}\n`);
  code = 1;
} finally {
  rmSync(envFile, { force: true });
  await environment.stop();
}
process.exit(code);
