// The plugin's commands, in the order help lists them. A new command is one module in this
// directory and one entry here; help, flag parsing and completion follow from the entry.

import type { Command } from "../command.ts";
import { branch } from "./branch.ts";
import { checkpoint } from "./checkpoint.ts";
import { checkpoints } from "./checkpoints.ts";
import { claim } from "./claim.ts";
import { hibernate } from "./hibernate.ts";
import { migrate } from "./migrate.ts";
import { pool } from "./pool.ts";
import { release } from "./release.ts";
import { restore } from "./restore.ts";
import { resume } from "./resume.ts";
import { snapshots } from "./snapshots.ts";
import { status } from "./status.ts";
import { suspend } from "./suspend.ts";
import { touch } from "./touch.ts";
import { wake } from "./wake.ts";

export const COMMANDS: readonly Command[] = [
  status,
  suspend,
  resume,
  hibernate,
  wake,
  migrate,
  snapshots,
  checkpoint,
  checkpoints,
  branch,
  restore,
  pool,
  claim,
  release,
  touch,
];
