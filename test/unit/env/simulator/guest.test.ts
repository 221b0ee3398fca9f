// The simulated guest: its shell grammar, vk-cocoon's argv quoting, and the commands that read and
// rewrite what makes a guest one machine. Copies of one state stay one machine until changed inside.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { FakeClock } from "../../../../src/clock.ts";
import { Guest, joinShell, parseLine } from "../../../env/simulator/guest.ts";

const clock = new FakeClock();

async function sh(
  guest: Guest,
  line: string,
  stdin = "",
): Promise<{ out: string; err: string; status: number }> {
  let out = "";
  let err = "";
  const status = await guest.run(["sh", "-c", line], {
    stdin: async () => Buffer.from(stdin),
    stdout: (d) => {
      out += d.toString();
    },
    stderr: (d) => {
      err += d.toString();
    },
    signal: new AbortController().signal,
    clock,
  });
  return { out, err, status };
}

describe("the guest's shell", () => {
  it("parses lists, quotes, escapes and redirections", () => {
    assert.deepEqual(parseLine(`a 'b c' "d \\"e\\"" f\\ g && h > /x; i || j 2>&1 >&2`), [
      { op: ";", words: ["a", "b c", 'd "e"', "f g"] },
      { op: "&&", words: ["h", ">", "/x"] },
      { op: ";", words: ["i"] },
      { op: "||", words: ["j", "2>&1", ">&2"] },
    ]);
  });

  it("expands sh -c's positional parameters, in double quotes and bare, but not in single quotes", async () => {
    assert.deepEqual(parseLine(`cat > "$1"; echo $0 \${2}x '$1' \\$1`, ["sh", "/tmp/a b", "y"]), [
      { op: ";", words: ["cat", ">", "/tmp/a b"] },
      { op: ";", words: ["echo", "sh", "yx", "$1", "$1"] },
    ]);
    const guest = Guest.firstBoot("g", clock.now());
    const write = await guest.run(["sh", "-c", 'cat > "$1" && cat "$1"', "sh", "/tmp/task.json"], {
      stdin: async () => Buffer.from("{}"),
      stdout: () => {},
      stderr: () => {},
      signal: new AbortController().signal,
      clock,
    });
    assert.equal(write, 0);
    assert.equal((await sh(guest, "cat /tmp/task.json")).out, "{}");
  });

  it("quotes argv as vk-cocoon's JoinShell does", () => {
    assert.equal(joinShell(["echo", "a b", "it's", "", "x=1,y@z"]), `echo 'a b' 'it'\\''s' '' x=1,y@z`);
  });

  it("runs && and || on the status, and exit ends the line", async () => {
    const guest = Guest.firstBoot("g", clock.now());
    assert.deepEqual(await sh(guest, "false && echo no || echo yes; exit 4; echo never"), {
      out: "yes\n",
      err: "",
      status: 4,
    });
  });

  it("writes stdin to a file and reads it back; an unknown command is 127", async () => {
    const guest = Guest.firstBoot("g", clock.now());
    assert.equal((await sh(guest, "cat > /tmp/f", "payload")).status, 0);
    assert.equal((await sh(guest, "cat /tmp/f")).out, "payload");
    assert.deepEqual(await sh(guest, "nope"), { out: "", err: "sh: 1: nope: not found\n", status: 127 });
    assert.equal((await sh(guest, "cat /missing")).status, 1);
  });
});

describe("what makes a guest one machine", () => {
  it("a resumed copy is the same machine: machine-id, host key, hostname and random reads", async () => {
    const original = Guest.firstBoot("orig", clock.now());
    const copy = Guest.resume(original.capture(clock.now()), clock.now());
    const identity =
      "cat /etc/machine-id; hostname; ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub; cat /proc/sys/kernel/random/uuid";
    assert.equal((await sh(copy, identity)).out, (await sh(original, identity)).out);
  });

  it("clones of one image are one machine; first boots are not", () => {
    const a = Guest.fromImage("img", clock.now());
    const b = Guest.fromImage("img", clock.now());
    assert.equal(a.machineId(), b.machineId());
    assert.equal(a.hostKeyFingerprint(), b.hostKeyFingerprint());
    assert.notEqual(Guest.firstBoot("x", 0).machineId(), Guest.firstBoot("x", 0).machineId());
  });

  it("the refresh commands make a copy another machine", async () => {
    const original = Guest.firstBoot("orig", clock.now());
    const copy = Guest.resume(original.capture(clock.now()), clock.now());
    const refresh = await sh(
      copy,
      "rm -f /etc/machine-id && systemd-machine-id-setup && hostnamectl set-hostname fresh && " +
        "rm -f /etc/ssh/ssh_host_* && ssh-keygen -A && cat > /dev/urandom",
      "entropy from the operator",
    );
    assert.equal(refresh.status, 0, refresh.err);
    assert.match(refresh.out, /Initializing machine ID from random generator\./);
    assert.match(copy.machineId(), /^[0-9a-f]{32}$/);
    assert.notEqual(copy.machineId(), original.machineId());
    assert.notEqual(copy.hostKeyFingerprint(), original.hostKeyFingerprint());
    assert.equal(copy.hostname, "fresh");
    const uuid = "cat /proc/sys/kernel/random/uuid";
    assert.notEqual((await sh(copy, uuid)).out, (await sh(original, uuid)).out);
  });

  it("systemd-machine-id-setup keeps a valid machine-id, and ssh-keygen -A keeps present keys", async () => {
    const guest = Guest.firstBoot("g", clock.now());
    const before = [guest.machineId(), guest.hostKeyFingerprint()];
    assert.deepEqual(await sh(guest, "systemd-machine-id-setup && ssh-keygen -A"), {
      out: "",
      err: "",
      status: 0,
    });
    assert.deepEqual([guest.machineId(), guest.hostKeyFingerprint()], before);
  });

  it("a resumed guest's clock runs on from its snapshot; date -s sets it", async () => {
    const start = clock.now();
    const guest = Guest.firstBoot("g", start);
    const state = guest.capture(start);
    // Resumed an hour later, the guest still reads the time of its snapshot.
    const resumed = Guest.resume(state, start + 3_600_000);
    clock.advance(3_600_000);
    assert.equal((await sh(resumed, "date +%s")).out, `${Math.floor(start / 1000)}\n`);
    await sh(resumed, `date -s @${Math.floor(clock.now() / 1000)}`);
    assert.equal((await sh(resumed, "date +%s")).out, `${Math.floor(clock.now() / 1000)}\n`);
  });
});
