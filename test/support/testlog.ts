// A test file's held log, kept as `go test` keeps what t.Log writes: the in-process operator's log
// lines, its child operator processes' output and the tests' own progress notes are held while a test
// runs, shown with the test's report if it fails and dropped if it passes. test/support/testlog-hooks.ts
// turns it on in every test file's process that test/run.ts starts; elsewhere (a benchmark, a file run
// by hand with node --test) it stays off and drops what it is given.
//
// Tests in one file run one at a time (node:test's default), so the lines held when a test ends are
// the ones written since the previous test ended: that test's own, and those of any `before` hook that
// ran in between. Lines that a test's background work writes after the test has ended go to the next test.

import type { LogDestination } from "../../src/log.ts";

export class TestLog implements LogDestination {
  #holding = false;
  #held: string[] = [];

  /** Hold what is written from now on; until this is called, written text is dropped. */
  startHolding(): void {
    this.#holding = true;
  }

  /** Holds `text`, whole lines ending in a newline, for the test now running. */
  write(text: string): void {
    if (this.#holding) this.#held.push(text);
  }

  /**
   * Ends the running test's hold. If the test failed, returns its held lines to show, under a
   * header; if it passed, or nothing was held, returns undefined. Either way the held lines are dropped.
   */
  endTest(passed: boolean): string | undefined {
    const held = this.#take();
    return passed || held === "" ? undefined : `log held while this test ran (${lineCount(held)}):\n${held}`;
  }

  /**
   * Ends the file's hold when its process exits. If any test or hook in the file failed, returns the
   * lines no test took (an `after` hook's, or a failed `before` hook's, whose tests never ran) to
   * show; otherwise returns undefined.
   */
  endFile(failed: boolean): string | undefined {
    const held = this.#take();
    return !failed || held === ""
      ? undefined
      : `log held since this file's last test ended (${lineCount(held)}):\n${held}`;
  }

  #take(): string {
    const held = this.#held.join("");
    this.#held = [];
    return held;
  }
}

/** "1 line", "2 lines": how many lines `text` holds. */
function lineCount(text: string): string {
  const count = text.split("\n").length - 1;
  return count === 1 ? "1 line" : `${count} lines`;
}

/** This test file's held log. */
export const testLog = new TestLog();
