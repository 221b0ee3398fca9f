// The simulated guest inside each VM: the state a real guest's disk and memory carry that makes it
// one machine (machine-id, hostname, SSH host keys, its clock, its kernel's random state, files), and
// a small shell that runs the fixed set of commands listed in test/README.md ("The simulated guest").
// A snapshot carries the state and a restore or clone gets the same state back, so copies of one
// guest are the same machine until something inside them is changed, as with Cloud Hypervisor
// snapshots (no VM generation ID reseeds the copy).

import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "../../../src/clock.ts";

const MACHINE_ID_FILE = "/etc/machine-id";
const HOSTNAME_FILE = "/etc/hostname";
const HOST_KEY_TYPES = ["rsa", "ecdsa", "ed25519"] as const;
const RANDOM_UUID_FILE = "/proc/sys/kernel/random/uuid";
const BOOT_ID_FILE = "/proc/sys/kernel/random/boot_id";
const URANDOM = "/dev/urandom";
const DEV_NULL = "/dev/null";

/** What a snapshot holds of a guest (JSON, inside the snapshot's disk layer). */
export interface GuestState {
  /** The kernel's hostname (`hostname`); /etc/hostname is a file like any other. */
  hostname: string;
  /** Regular files by absolute path, base64. */
  files: Record<string, string>;
  /** The guest's wall clock when the state was taken, ms since the epoch. */
  clockMs: number;
  /** The kernel's random pool, hex; reads derive from it and a counter, writes to /dev/urandom mix in. */
  random: string;
  randomReads: number;
  bootId: string;
}

export interface GuestIO {
  /** The whole stdin (resolves at its end); only commands that read stdin wait for it. */
  stdin(): Promise<Buffer>;
  stdout(data: Buffer | string): void;
  stderr(data: Buffer | string): void;
  /** The session ended (the client went away or gave up): a running command stops. */
  signal: AbortSignal;
  clock: Clock;
}

/** The shell's way out: `exit N`. */
class ShellExit {
  readonly code: number;
  constructor(code: number) {
    this.code = code;
  }
}

export class Guest {
  private state: GuestState;
  /** Host time the clock was last read into state.clockMs. */
  private clockAnchor: number;

  private constructor(state: GuestState, hostNow: number) {
    this.state = structuredClone(state);
    this.clockAnchor = hostNow;
  }

  /** A first boot: a new machine-id, host keys and random pool; hostname = the VM name. */
  static firstBoot(hostname: string, hostNow: number): Guest {
    const guest = new Guest(
      {
        hostname,
        files: {},
        clockMs: hostNow,
        random: randomBytes(32).toString("hex"),
        randomReads: 0,
        bootId: uuidFrom(randomBytes(16)),
      },
      hostNow,
    );
    guest.writeFile(MACHINE_ID_FILE, `${randomBytes(16).toString("hex")}\n`);
    guest.writeFile(HOSTNAME_FILE, `${hostname}\n`);
    for (const type of HOST_KEY_TYPES) guest.generateHostKey(type);
    return guest;
  }

  /**
   * A clone of an image's snapshot: every VM cloned from one image starts as the same machine
   * (machine-id, host keys, random pool), the image's; only the clock is the host's.
   */
  static fromImage(image: string, hostNow: number): Guest {
    const seed = (label: string, bytes: number) =>
      createHash("sha256").update(`${image}\0${label}`).digest().subarray(0, bytes);
    const guest = new Guest(
      {
        hostname: "localhost",
        files: {},
        clockMs: hostNow,
        random: seed("random", 32).toString("hex"),
        randomReads: 0,
        bootId: uuidFrom(seed("boot", 16)),
      },
      hostNow,
    );
    guest.writeFile(MACHINE_ID_FILE, `${seed("machine-id", 16).toString("hex")}\n`);
    guest.writeFile(HOSTNAME_FILE, "localhost\n");
    for (const type of HOST_KEY_TYPES) guest.writeHostKey(type, seed(`host-key-${type}`, 32));
    return guest;
  }

  /** A restore or fork: the same machine, resumed; its clock runs on from where the state left it. */
  static resume(state: GuestState, hostNow: number): Guest {
    return new Guest(state, hostNow);
  }

  /** The state now, for a snapshot or a fork. */
  capture(hostNow: number): GuestState {
    return structuredClone({ ...this.state, clockMs: this.clockAt(hostNow) });
  }

  get hostname(): string {
    return this.state.hostname;
  }

  machineId(): string {
    return this.fileText(MACHINE_ID_FILE)?.trim() ?? "";
  }

  /** `SHA256:…` of the ED25519 host key, as `ssh-keygen -lf` prints it; "" without the key. */
  hostKeyFingerprint(type: (typeof HOST_KEY_TYPES)[number] = "ed25519"): string {
    const pub = this.fileText(`/etc/ssh/ssh_host_${type}_key.pub`);
    return pub === undefined ? "" : fingerprintOf(pub);
  }

  /** Runs one command line (argv joined as vk-cocoon joins it for SSH); resolves with its exit status. */
  async run(argv: string[], io: GuestIO): Promise<number> {
    try {
      return await this.runLine(joinShell(argv), io);
    } catch (err) {
      if (err instanceof ShellExit) return err.code;
      throw err;
    }
  }

  // ---- the shell ----

  private async runLine(line: string, io: GuestIO, params: readonly string[] = []): Promise<number> {
    let status = 0;
    for (const { op, words } of parseLine(line, params)) {
      if (op === "&&" && status !== 0) continue;
      if (op === "||" && status === 0) continue;
      status = await this.runCommand(words, io);
    }
    return status;
  }

  private async runCommand(rawWords: string[], io: GuestIO): Promise<number> {
    const { words, stdoutTo, append, stdinFrom, stderrTo } = this.redirections(rawWords);
    if (words.length === 0) return 0;
    const out: Buffer[] = [];
    const stdout =
      stdoutTo === undefined
        ? io.stdout
        : stdoutTo === "&2"
          ? io.stderr
          : (d: Buffer | string) => out.push(Buffer.from(d));
    const cmdIO: GuestIO = {
      ...io,
      stdin:
        stdinFrom === undefined ? io.stdin : async () => this.readFileBytes(stdinFrom) ?? Buffer.alloc(0),
      stdout,
      stderr: stderrTo === DEV_NULL ? () => undefined : stderrTo === "&1" ? stdout : io.stderr,
    };
    const status = await this.command(
      words.flatMap((w) => this.expand(w)),
      cmdIO,
    );
    if (stdoutTo !== undefined && stdoutTo !== "&2") {
      const data = Buffer.concat(out);
      if (stdoutTo === URANDOM) this.mixEntropy(data);
      else if (stdoutTo !== DEV_NULL) {
        const before = append ? (this.readFileBytes(stdoutTo) ?? Buffer.alloc(0)) : Buffer.alloc(0);
        this.writeFile(stdoutTo, Buffer.concat([before, data]));
      }
    }
    return status;
  }

  private redirections(words: string[]): {
    words: string[];
    stdoutTo?: string;
    append: boolean;
    stdinFrom?: string;
    stderrTo?: string;
  } {
    const kept: string[] = [];
    let stdoutTo: string | undefined;
    let stdinFrom: string | undefined;
    let stderrTo: string | undefined;
    let append = false;
    for (let i = 0; i < words.length; i++) {
      const w = words[i]!;
      if (w === ">" || w === ">>") {
        stdoutTo = words[++i];
        append = w === ">>";
      } else if (w === "<") stdinFrom = words[++i];
      else if (w === "2>") stderrTo = words[++i];
      else if (w === "2>&1") stderrTo = "&1";
      else if (w === ">&2") stdoutTo = "&2";
      else kept.push(w);
    }
    return {
      words: kept,
      append,
      ...(stdoutTo === undefined ? {} : { stdoutTo }),
      ...(stdinFrom === undefined ? {} : { stdinFrom }),
      ...(stderrTo === undefined ? {} : { stderrTo }),
    };
  }

  /** A word with `*` expands to the files it matches (sorted), or stays as written when none do. */
  private expand(word: string): string[] {
    if (!word.includes("*")) return [word];
    const pattern = new RegExp(`^${word.split("*").map(escapeRegExp).join("[^/]*")}$`);
    const matches = Object.keys(this.state.files)
      .filter((path) => pattern.test(path))
      .sort();
    return matches.length > 0 ? matches : [word];
  }

  private async command(words: string[], io: GuestIO): Promise<number> {
    const [name, ...args] = words as [string, ...string[]];
    switch (name) {
      case "true":
      case ":":
      case "sync":
        return 0;
      case "false":
        return 1;
      case "exit":
        throw new ShellExit(args[0] === undefined ? 0 : Number(args[0]) & 0xff);
      case "sh":
      case "bash":
        if (args[0] !== "-c" || args[1] === undefined) {
          io.stderr(`${name}: only ${name} -c COMMAND is understood here\n`);
          return 2;
        }
        try {
          // `sh -c LINE NAME ARG…`: NAME is $0 and the ARGs $1… inside LINE.
          return await this.runLine(args[1], io, args.slice(2));
        } catch (err) {
          if (err instanceof ShellExit) return err.code;
          throw err;
        }
      case "echo": {
        const newline = args[0] !== "-n";
        io.stdout(`${(newline ? args : args.slice(1)).join(" ")}${newline ? "\n" : ""}`);
        return 0;
      }
      case "cat":
        return this.cat(args, io);
      case "tee": {
        const data = await io.stdin();
        for (const file of args) this.writeTo(file, data);
        io.stdout(data);
        return 0;
      }
      case "rm":
        return this.rm(args, io);
      case "mkdir":
        return 0;
      case "sleep":
        return this.sleep(args[0] ?? "", io);
      case "hostname":
        if (args.length === 0) {
          io.stdout(`${this.state.hostname}\n`);
          return 0;
        }
        this.state.hostname = args[0]!;
        return 0;
      case "hostnamectl":
        return this.hostnamectl(args, io);
      case "systemd-machine-id-setup":
        return this.machineIdSetup(io);
      case "ssh-keygen":
        return this.sshKeygen(args, io);
      case "date":
        return this.date(args, io);
      default:
        io.stderr(`sh: 1: ${name}: not found\n`);
        return 127;
    }
  }

  private async cat(args: string[], io: GuestIO): Promise<number> {
    let status = 0;
    for (const file of args.length === 0 ? ["-"] : args) {
      if (file === "-") {
        io.stdout(await io.stdin());
        continue;
      }
      const data = this.readFileBytes(file);
      if (data === undefined) {
        io.stderr(`cat: ${file}: No such file or directory\n`);
        status = 1;
      } else io.stdout(data);
    }
    return status;
  }

  private rm(args: string[], io: GuestIO): number {
    const force = args.some((a) => /^-[a-z]*f/.test(a));
    let status = 0;
    for (const file of args.filter((a) => !a.startsWith("-"))) {
      if (file in this.state.files) delete this.state.files[file];
      else if (!force) {
        io.stderr(`rm: cannot remove '${file}': No such file or directory\n`);
        status = 1;
      }
    }
    return status;
  }

  private async sleep(arg: string, io: GuestIO): Promise<number> {
    const forever = arg === "infinity";
    const seconds = Number(arg);
    if (!forever && !(seconds >= 0)) {
      io.stderr(`sleep: invalid time interval '${arg}'\n`);
      return 1;
    }
    await (forever
      ? new Promise<void>((resolve) => io.signal.addEventListener("abort", () => resolve(), { once: true }))
      : io.clock.sleep(seconds * 1000, io.signal).catch(() => undefined));
    return io.signal.aborted ? 130 : 0;
  }

  private hostnamectl(args: string[], io: GuestIO): number {
    if (args[0] === "set-hostname" && args[1] !== undefined) {
      this.state.hostname = args[1];
      this.writeFile(HOSTNAME_FILE, `${args[1]}\n`);
      return 0;
    }
    if (args[0] === "hostname" && args.length === 1) {
      io.stdout(`${this.state.hostname}\n`);
      return 0;
    }
    io.stderr("hostnamectl: only set-hostname NAME and hostname are understood here\n");
    return 1;
  }

  /** systemd's rule: an existing valid machine-id is kept; a missing or empty one is generated. */
  private machineIdSetup(io: GuestIO): number {
    if (/^[0-9a-f]{32}$/.test(this.machineId())) return 0;
    io.stdout("Initializing machine ID from random generator.\n");
    this.writeFile(MACHINE_ID_FILE, `${this.readRandom(16).toString("hex")}\n`);
    return 0;
  }

  private sshKeygen(args: string[], io: GuestIO): number {
    if (args.length === 1 && args[0] === "-A") {
      const missing = HOST_KEY_TYPES.filter((t) => !(`/etc/ssh/ssh_host_${t}_key` in this.state.files));
      if (missing.length > 0) {
        io.stdout(
          `ssh-keygen: generating new host keys: ${missing.map((t) => t.toUpperCase()).join(" ")} \n`,
        );
        for (const type of missing) this.generateHostKey(type);
      }
      return 0;
    }
    const file = args[0] === "-lf" ? args[1] : args[0] === "-l" && args[1] === "-f" ? args[2] : undefined;
    if (file !== undefined) {
      const text = this.fileText(file);
      if (text === undefined) {
        io.stderr(`${file}: No such file or directory\n`);
        return 1;
      }
      const type = text.split(" ")[0]?.replace(/^ssh-|^ecdsa-sha2-nistp256$/g, "") || "unknown";
      io.stdout(`256 ${fingerprintOf(text)} root@${this.state.hostname} (${type.toUpperCase()})\n`);
      return 0;
    }
    io.stderr("ssh-keygen: only -A and -lf FILE are understood here\n");
    return 1;
  }

  private date(args: string[], io: GuestIO): number {
    const now = () => this.clockAt(io.clock.now());
    if (args.length === 1 && args[0] === "+%s") {
      io.stdout(`${Math.floor(now() / 1000)}\n`);
      return 0;
    }
    const set = args.indexOf("-s");
    if (set >= 0 && args[set + 1]?.startsWith("@")) {
      const seconds = Number(args[set + 1]!.slice(1));
      if (!Number.isFinite(seconds)) {
        io.stderr(`date: invalid date '${args[set + 1]}'\n`);
        return 1;
      }
      this.state.clockMs = seconds * 1000;
      this.clockAnchor = io.clock.now();
      io.stdout(`${new Date(seconds * 1000).toUTCString()}\n`);
      return 0;
    }
    io.stderr("date: only +%s and -s @SECONDS are understood here\n");
    return 1;
  }

  // ---- files, keys, randomness, clock ----

  private clockAt(hostNow: number): number {
    return this.state.clockMs + (hostNow - this.clockAnchor);
  }

  private readFileBytes(path: string): Buffer | undefined {
    if (path === RANDOM_UUID_FILE) return Buffer.from(`${uuidFrom(this.readRandom(16))}\n`);
    if (path === BOOT_ID_FILE) return Buffer.from(`${this.state.bootId}\n`);
    if (path === URANDOM) return this.readRandom(64);
    if (path === DEV_NULL) return Buffer.alloc(0);
    const data = this.state.files[path];
    return data === undefined ? undefined : Buffer.from(data, "base64");
  }

  private fileText(path: string): string | undefined {
    return this.readFileBytes(path)?.toString("utf8");
  }

  private writeFile(path: string, data: Buffer | string): void {
    this.state.files[path] = Buffer.from(data).toString("base64");
  }

  private writeTo(path: string, data: Buffer): void {
    if (path === URANDOM) this.mixEntropy(data);
    else if (path !== DEV_NULL) this.writeFile(path, data);
  }

  /** The pool's next bytes: a clone with the same pool and count reads the same bytes. */
  private readRandom(bytes: number): Buffer {
    const out: Buffer[] = [];
    for (let got = 0; got < bytes; got += 32) {
      this.state.randomReads++;
      out.push(createHash("sha256").update(`${this.state.random}:${this.state.randomReads}`).digest());
    }
    return Buffer.concat(out).subarray(0, bytes);
  }

  private mixEntropy(data: Buffer): void {
    this.state.random = createHash("sha256").update(this.state.random).update(data).digest("hex");
  }

  private generateHostKey(type: (typeof HOST_KEY_TYPES)[number]): void {
    this.writeHostKey(type, this.readRandom(32));
  }

  private writeHostKey(type: (typeof HOST_KEY_TYPES)[number], material: Buffer): void {
    const algorithm = type === "ecdsa" ? "ecdsa-sha2-nistp256" : `ssh-${type}`;
    this.writeFile(
      `/etc/ssh/ssh_host_${type}_key`,
      `simulated ${type} private key ${material.toString("hex")}\n`,
    );
    this.writeFile(
      `/etc/ssh/ssh_host_${type}_key.pub`,
      `${algorithm} ${createHash("sha512").update(material).digest("base64")} root@${this.state.hostname}\n`,
    );
  }
}

/** `SHA256:` and the unpadded base64 SHA-256 of the public key blob, as OpenSSH prints fingerprints. */
function fingerprintOf(pubLine: string): string {
  const blob = Buffer.from(pubLine.split(" ")[1] ?? "", "base64");
  return `SHA256:${createHash("sha256").update(blob).digest("base64").replace(/=+$/, "")}`;
}

function uuidFrom(bytes: Buffer): string {
  const h = bytes.toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * vk-cocoon's guest.JoinShell: each argument POSIX-quoted unless it is made only of letters, digits
 * and `_-./:=@+,` (guest/guest.go), then joined with spaces for ssh's session.Run.
 */
export function joinShell(argv: string[]): string {
  return argv
    .map((a) =>
      a === "" ? "''" : /^[A-Za-z0-9_\-./:=@+,]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`,
    )
    .join(" ");
}

/**
 * The shell grammar the guest understands: commands separated by `;`, `&&`, `||` (or newlines),
 * words in single or double quotes or with backslash escapes, the positional parameters `$0`…`$9`
 * and `${N}` (`params`; unset ones are empty; outside double quotes a value is not split into
 * words), and the redirections `>`, `>>`, `<`, `2>`, `2>&1`, `>&2` as words of their own.
 */
export function parseLine(
  line: string,
  params: readonly string[] = [],
): { op: ";" | "&&" | "||"; words: string[] }[] {
  const commands: { op: ";" | "&&" | "||"; words: string[] }[] = [];
  let op: ";" | "&&" | "||" = ";";
  let words: string[] = [];
  let word: string | undefined;
  const endWord = () => {
    if (word !== undefined) words.push(word);
    word = undefined;
  };
  const endCommand = (next: ";" | "&&" | "||") => {
    endWord();
    if (words.length > 0) commands.push({ op, words });
    words = [];
    op = next;
  };
  /** The parameter `$N` or `${N}` at `at` and its length, or undefined when there is none. */
  const param = (at: number): { value: string; length: number } | undefined => {
    const m = /^\$(?:(\d)|\{(\d+)\})/.exec(line.slice(at, at + 12));
    if (!m) return undefined;
    return { value: params[Number(m[1] ?? m[2])] ?? "", length: m[0].length };
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    const expanded = c === "$" ? param(i) : undefined;
    if (expanded) {
      word = (word ?? "") + expanded.value;
      i += expanded.length - 1;
    } else if (c === "'") {
      const close = line.indexOf("'", i + 1);
      word = (word ?? "") + line.slice(i + 1, close < 0 ? line.length : close);
      i = close < 0 ? line.length : close;
    } else if (c === '"') {
      let j = i + 1;
      let text = "";
      while (j < line.length && line[j] !== '"') {
        const inner = line[j] === "$" ? param(j) : undefined;
        if (inner) {
          text += inner.value;
          j += inner.length;
          continue;
        }
        if (line[j] === "\\" && j + 1 < line.length && '"\\$`'.includes(line[j + 1]!)) j++;
        text += line[j];
        j++;
      }
      word = (word ?? "") + text;
      i = j;
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[++i];
    } else if (c === " " || c === "\t") {
      endWord();
    } else if (c === ";" || c === "\n") {
      endCommand(";");
    } else if (c === "&" && line[i + 1] === "&") {
      endCommand("&&");
      i++;
    } else if (c === "|" && line[i + 1] === "|") {
      endCommand("||");
      i++;
    } else if (c === ">" && word === undefined && line.slice(i, i + 3) === ">&2") {
      endWord();
      words.push(">&2");
      i += 2;
    } else if (c === ">" || c === "<") {
      const redirect =
        word === "2" && line.slice(i, i + 3) === ">&1"
          ? "2>&1"
          : word === "2"
            ? "2>"
            : line[i + 1] === ">"
              ? ">>"
              : c;
      if (word === "2") word = undefined;
      endWord();
      words.push(redirect);
      i += redirect === "2>&1" ? 2 : redirect === ">>" ? 1 : 0;
    } else {
      word = (word ?? "") + c;
    }
  }
  endCommand(";");
  return commands;
}
