// Holding one object's calls on the fake client: a test of calls sent together (or of one that must
// wait for another's answer) keeps one answer back, looks at what went out meanwhile, then lets it go.

import type { FakeClient } from "./fakeclient.ts";

export interface HeldCalls {
  /** `<verb> <plural>/<name>` of every call of that verb, as it is made. */
  readonly sent: string[];
  release(): void;
}

/**
 * From now on, every `verb` call on the object named `name` is answered only after release();
 * calls on other objects go through. Each answer is noted in `answered` when it returns.
 */
export function holdCalls(
  client: FakeClient,
  verb: "get" | "patch",
  name: string,
  answered: string[] = [],
): HeldCalls {
  const original = client[verb].bind(client) as (...args: unknown[]) => Promise<unknown>;
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const sent: string[] = [];
  Object.assign(client, {
    [verb]: async (...args: unknown[]) => {
      const what = `${verb} ${(args[0] as { plural: string }).plural}/${args[2] as string}`;
      sent.push(what);
      if (args[2] === name) await held;
      const answer = await original(...args);
      answered.push(`${what} answered`);
      return answer;
    },
  });
  return { sent, release };
}

/** Lets every pending promise callback and I/O turn run, so what can go out has gone out. */
export async function settle(): Promise<void> {
  for (let turn = 0; turn < 10; turn++) await new Promise(setImmediate);
}
