// The operator's flags and environment (docs/configuration.md), OCI_REGISTRY and the integer
// variables, and Go flag-package syntax.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Config,
  ConfigError,
  type Env,
  leaderElectionNamespace,
  loadConfig,
  parseGoAtoi,
  parseGoBool,
  parseGoFlagInt,
  usage,
} from "../../src/config.ts";
import { createRegistryClient } from "../../src/registry/index.ts";

const REGISTRY = { OCI_REGISTRY: "example.com/proj/repo" };

function load(argv: string[] = [], env: Env = {}): Config {
  return loadConfig(argv, { ...REGISTRY, ...env }).config;
}

function refused(argv: string[], env: Env = {}): ConfigError {
  try {
    loadConfig(argv, { ...REGISTRY, ...env });
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail(`loadConfig(${JSON.stringify(argv)}) was accepted`);
}

describe("defaults", () => {
  it("match the Go operator when nothing is set", () => {
    assert.deepEqual(load(), {
      metricsAddr: ":8080",
      probeAddr: ":8081",
      leaderElect: true,
      cocoonSetConcurrency: 4,
      hibernationConcurrency: 4,
      copyChunkBytes: 16 * 1024 * 1024,
      copyConcurrency: 4,
      restoreConcurrency: 4,
      guestHooks: true,
      registryBase: "example.com/proj/repo",
      logLevel: "info",
      kubeconfig: "",
      metricsSecure: false,
      metricsCert: undefined,
    });
  });
});

describe("secure metrics flags", () => {
  it("--metrics-secure alone serves a self-signed certificate", () => {
    assert.equal(load(["--metrics-secure"]).metricsSecure, true);
    assert.equal(load(["--metrics-secure"]).metricsCert, undefined);
  });

  it("--metrics-cert-path names the directory of tls.crt and tls.key unless the names are given", () => {
    assert.deepEqual(load(["--metrics-secure", "--metrics-cert-path=/certs/"]).metricsCert, {
      certFile: "/certs/tls.crt",
      keyFile: "/certs/tls.key",
    });
    assert.deepEqual(
      load([
        "--metrics-secure",
        "--metrics-cert-path",
        "/certs",
        "--metrics-cert-name=cert.pem",
        "--metrics-cert-key=key.pem",
      ]).metricsCert,
      { certFile: "/certs/cert.pem", keyFile: "/certs/key.pem" },
    );
  });

  it("a certificate path without --metrics-secure is refused at start", () => {
    const err = refused(["--metrics-cert-path=/certs"]);
    assert.equal(err.exitCode, 1);
    assert.match(err.message, /--metrics-cert-path needs --metrics-secure/);
  });
});

describe("OCI_REGISTRY", () => {
  it("a set OCI_REGISTRY yields a registry client for that base", () => {
    const { config } = loadConfig([], { OCI_REGISTRY: "example.com/proj/repo" });
    assert.equal(config.registryBase, "example.com/proj/repo");
    const client = createRegistryClient(config.registryBase, { dockerConfigPath: "/nonexistent" });
    assert.equal(typeof client.hasManifest, "function");
  });

  it("unset or empty is refused with the Go operator's message", () => {
    for (const env of [{}, { OCI_REGISTRY: "" }]) {
      assert.throws(
        () => loadConfig([], env),
        (err) =>
          err instanceof ConfigError && err.exitCode === 1 && err.message === "OCI_REGISTRY must be set",
      );
    }
  });
});

describe("integer environment variables", () => {
  for (const [flag, variable] of [
    ["cocoonSetConcurrency", "COCOONSET_CONCURRENCY"],
    ["hibernationConcurrency", "HIBERNATION_CONCURRENCY"],
  ] as const) {
    it(`${variable}: unset → 4, "8" → 8, "many" → 4 (with a warning)`, () => {
      assert.equal(load()[flag], 4);
      assert.equal(load([], { [variable]: "8" })[flag], 8);
      const many = loadConfig([], { ...REGISTRY, [variable]: "many" });
      assert.equal(many.config[flag], 4);
      assert.match(many.warnings.join("\n"), new RegExp(`${variable}="many"`));
    });

    it(`${variable} is read like strconv.Atoi`, () => {
      assert.equal(load([], { [variable]: "+6" })[flag], 6);
      assert.equal(load([], { [variable]: "08" })[flag], 8);
      for (const bad of ["", " 8", "8 ", "0x8", "1_0", "8.0", "99999999999999999999"]) {
        assert.equal(load([], { [variable]: bad })[flag], 4, bad);
      }
    });
  }

  it("below 1 is refused at start, from the environment or a flag", () => {
    for (const [argv, env, message] of [
      [[], { COCOONSET_CONCURRENCY: "0" }, "cocoonset concurrency must be at least 1, got 0"],
      [["--cocoonset-concurrency=-1"], {}, "cocoonset concurrency must be at least 1, got -1"],
      [[], { HIBERNATION_CONCURRENCY: "-3" }, "hibernation concurrency must be at least 1, got -3"],
      [["--hibernation-concurrency", "0"], {}, "hibernation concurrency must be at least 1, got 0"],
    ] as const) {
      const err = refused([...argv], env);
      assert.equal(err.exitCode, 1);
      assert.equal(err.message, message);
    }
  });

  it("a valid flag rescues a below-1 environment value", () => {
    assert.equal(load(["--cocoonset-concurrency=2"], { COCOONSET_CONCURRENCY: "0" }).cocoonSetConcurrency, 2);
  });
});

describe("blob copy settings", () => {
  it("COPY_CHUNK_MIB and --copy-chunk-mib give the PATCH size in MiB, 0 a single PUT per blob", () => {
    assert.equal(load([], { COPY_CHUNK_MIB: "32" }).copyChunkBytes, 32 * 1024 * 1024);
    assert.equal(load(["--copy-chunk-mib=0"], { COPY_CHUNK_MIB: "16" }).copyChunkBytes, 0);
    const bad = loadConfig([], { ...REGISTRY, COPY_CHUNK_MIB: "big" });
    assert.equal(bad.config.copyChunkBytes, 16 * 1024 * 1024);
    assert.match(bad.warnings.join("\n"), /COPY_CHUNK_MIB="big".*using 16/);
  });

  it("a chunk below 0 or above 4096 MiB is refused at start", () => {
    for (const [argv, env, got] of [
      [["--copy-chunk-mib=-1"], {}, -1],
      [[], { COPY_CHUNK_MIB: "4097" }, 4097],
    ] as const) {
      const err = refused([...argv], env);
      assert.equal(err.exitCode, 1);
      assert.equal(err.message, `copy chunk must be 0 (one PUT per blob) to 4096 MiB, got ${got}`);
    }
  });

  it("COPY_CONCURRENCY and --copy-concurrency bound a branch's copies; below 1 is refused", () => {
    assert.equal(load([], { COPY_CONCURRENCY: "2" }).copyConcurrency, 2);
    assert.equal(load(["--copy-concurrency", "8"]).copyConcurrency, 8);
    const err = refused(["--copy-concurrency=0"]);
    assert.equal(err.message, "copy concurrency must be at least 1, got 0");
  });

  it("RESTORE_CONCURRENCY and --restore-concurrency set the restore workers; below 1 is refused", () => {
    assert.equal(load([], { RESTORE_CONCURRENCY: "2" }).restoreConcurrency, 2);
    assert.equal(load(["--restore-concurrency", "8"]).restoreConcurrency, 8);
    const err = refused(["--restore-concurrency=0"]);
    assert.equal(err.message, "restore concurrency must be at least 1, got 0");
  });
});

describe("string settings", () => {
  it("METRICS_ADDR and PROBE_ADDR set the addresses; empty means the default", () => {
    const config = load([], { METRICS_ADDR: "127.0.0.1:9090", PROBE_ADDR: "0" });
    assert.equal(config.metricsAddr, "127.0.0.1:9090");
    assert.equal(config.probeAddr, "0");
    assert.equal(load([], { METRICS_ADDR: "", PROBE_ADDR: "" }).metricsAddr, ":8080");
    assert.equal(load([], { METRICS_ADDR: "", PROBE_ADDR: "" }).probeAddr, ":8081");
  });

  it("flags override the variables", () => {
    const config = load(["--metrics-bind-address=:9000", "--health-probe-bind-address", ":9001"], {
      METRICS_ADDR: ":7000",
      PROBE_ADDR: ":7001",
    });
    assert.equal(config.metricsAddr, ":9000");
    assert.equal(config.probeAddr, ":9001");
  });

  it("--kubeconfig is accepted (controller-runtime registers it)", () => {
    assert.equal(load(["--kubeconfig=/tmp/kc"]).kubeconfig, "/tmp/kc");
  });

  it("OPERATOR_LOG_LEVEL: every level zerolog parses, in any case, and its numbers", () => {
    const cases: [string | undefined, string][] = [
      [undefined, "info"],
      ["", "info"],
      ["TRACE", "trace"],
      ["Debug", "debug"],
      ["info", "info"],
      ["WARN", "warn"],
      ["error", "error"],
      ["fatal", "fatal"],
      ["panic", "silent"],
      ["disabled", "silent"],
      ["-1", "trace"],
      ["-128", "trace"],
      ["0", "debug"],
      ["+2", "warn"],
      ["4", "fatal"],
      ["127", "silent"],
    ];
    for (const [value, threshold] of cases) {
      assert.equal(load([], { OPERATOR_LOG_LEVEL: value }).logLevel, threshold, String(value));
    }
  });

  it("an OPERATOR_LOG_LEVEL zerolog refuses stops the start with exit code 1, before OCI_REGISTRY", () => {
    const cases: [string, string][] = [
      ["verbose", "setup log: setup log: Unknown Level String: 'verbose', defaulting to NoLevel"],
      ["warning", "setup log: setup log: Unknown Level String: 'warning', defaulting to NoLevel"],
      [" info", "setup log: setup log: Unknown Level String: ' info', defaulting to NoLevel"],
      ["128", "setup log: setup log: Out-Of-Bounds Level: '128', defaulting to NoLevel"],
      ["-129", "setup log: setup log: Out-Of-Bounds Level: '-129', defaulting to NoLevel"],
    ];
    for (const [value, message] of cases) {
      assert.throws(
        () => loadConfig([], { OPERATOR_LOG_LEVEL: value }),
        (err: unknown) =>
          err instanceof ConfigError && err.exitCode === 1 && err.plain && err.message === message,
        value,
      );
    }
  });
});

describe("LEADER_ELECT and --leader-elect", () => {
  it("the variable is strconv.ParseBool; an invalid value means the default (true)", () => {
    for (const value of ["false", "0", "f", "F", "FALSE", "False"]) {
      assert.equal(load([], { LEADER_ELECT: value }).leaderElect, false, value);
    }
    for (const value of ["true", "1", "t", "T", "TRUE", "True"]) {
      assert.equal(load([], { LEADER_ELECT: value }).leaderElect, true, value);
    }
    for (const value of ["", "no", "off", "yes", " false"]) {
      assert.equal(load([], { LEADER_ELECT: value }).leaderElect, true, JSON.stringify(value));
    }
    assert.match(loadConfig([], { ...REGISTRY, LEADER_ELECT: "no" }).warnings.join(), /LEADER_ELECT="no"/);
  });

  it("a bare flag is true, =value is ParseBool, and the flag beats the variable", () => {
    assert.equal(load(["--leader-elect"], { LEADER_ELECT: "false" }).leaderElect, true);
    assert.equal(load(["--leader-elect=false"], { LEADER_ELECT: "true" }).leaderElect, false);
    assert.equal(load(["-leader-elect=0"]).leaderElect, false);
  });

  it("a boolean flag never takes the next argument: parsing stops there", () => {
    // Go: `-leader-elect false` sets true, and "false" is the first positional argument.
    const config = load(["--leader-elect", "false", "--cocoonset-concurrency=9"]);
    assert.equal(config.leaderElect, true);
    assert.equal(config.cocoonSetConcurrency, 4);
  });

  it("an invalid flag value is a usage error", () => {
    const err = refused(["--leader-elect=maybe"]);
    assert.equal(err.exitCode, 2);
    assert.match(err.message, /^invalid boolean value "maybe" for -leader-elect: parse error\nUsage of/);
  });
});

describe("Go flag syntax", () => {
  it("one or two dashes, =value or the next argument, last one wins", () => {
    assert.equal(load(["-cocoonset-concurrency=5"]).cocoonSetConcurrency, 5);
    assert.equal(load(["--cocoonset-concurrency", "6"]).cocoonSetConcurrency, 6);
    assert.equal(load(["-cocoonset-concurrency", "7", "--cocoonset-concurrency=3"]).cocoonSetConcurrency, 3);
  });

  it("a value-taking flag takes the next argument even when it starts with a dash", () => {
    assert.equal(load(["--metrics-bind-address", "-weird"]).metricsAddr, "-weird");
  });

  it("int flags are strconv.ParseInt(s, 0, 64): prefixes, octal and underscores", () => {
    assert.equal(load(["--cocoonset-concurrency=0x10"]).cocoonSetConcurrency, 16);
    assert.equal(load(["--cocoonset-concurrency=010"]).cocoonSetConcurrency, 8);
    assert.equal(load(["--cocoonset-concurrency=1_000"]).cocoonSetConcurrency, 1000);
  });

  it("an invalid int flag value is a usage error", () => {
    const err = refused(["--hibernation-concurrency=many"]);
    assert.equal(err.exitCode, 2);
    assert.match(err.message, /^invalid value "many" for flag -hibernation-concurrency: parse error\n/);
    assert.match(refused(["--hibernation-concurrency=9223372036854775808"]).message, /value out of range/);
  });

  it("an unknown flag is a usage error that shows the usage", () => {
    const err = refused(["--zap-log-level=debug"]);
    assert.equal(err.exitCode, 2);
    assert.match(err.message, /^flag provided but not defined: -zap-log-level\nUsage of cocoon-operator:/);
    assert.match(err.message, /-metrics-bind-address string/);
  });

  it("a value-taking flag at the end is a usage error", () => {
    const err = refused(["--metrics-bind-address"]);
    assert.equal(err.exitCode, 2);
    assert.match(err.message, /^flag needs an argument: -metrics-bind-address\n/);
  });

  it("bad flag syntax is a usage error", () => {
    for (const arg of ["---leader-elect", "-=x", "--=x"]) {
      const err = refused([arg]);
      assert.equal(err.exitCode, 2, arg);
      assert.match(err.message, new RegExp(`^bad flag syntax: ${arg}\n`));
    }
  });

  it("parsing stops at -- or the first non-flag argument; the rest is ignored", () => {
    assert.equal(load(["--", "--bogus"]).leaderElect, true);
    assert.equal(load(["serve", "--bogus", "--leader-elect=false"]).leaderElect, true);
    assert.equal(load(["-", "--bogus"]).metricsAddr, ":8080");
  });

  it("-h and --help print the usage and exit 0", () => {
    for (const arg of ["-h", "--help", "-help"]) {
      const err = refused([arg]);
      assert.equal(err.exitCode, 0);
      assert.match(err.message, /^Usage of cocoon-operator:\n/);
    }
  });

  it("the usage text shows the effective defaults", () => {
    const text = usage({ COCOONSET_CONCURRENCY: "12", METRICS_ADDR: ":9999" });
    assert.match(
      text,
      /Maximum concurrent CocoonSet reconciles\. \(env COCOONSET_CONCURRENCY\) \(default 12\)/,
    );
    assert.match(text, /\(default ":9999"\)/);
  });
});

describe("Go parsing primitives", () => {
  it("parseGoBool accepts exactly strconv.ParseBool's spellings", () => {
    assert.equal(parseGoBool("tRuE"), undefined);
    assert.equal(parseGoBool("yes"), undefined);
    assert.equal(parseGoBool("T"), true);
    assert.equal(parseGoBool("0"), false);
  });

  it("parseGoAtoi: decimal only, int64 range", () => {
    assert.equal(parseGoAtoi("-12"), -12);
    assert.equal(typeof parseGoAtoi("9223372036854775807"), "number");
    assert.equal(parseGoAtoi("9223372036854775808"), "range");
    assert.equal(parseGoAtoi("1e3"), "syntax");
  });

  it("parseGoFlagInt: base prefixes and underscore rules", () => {
    assert.equal(parseGoFlagInt("0"), 0);
    assert.equal(parseGoFlagInt("-0x1f"), -31);
    assert.equal(parseGoFlagInt("0o17"), 15);
    assert.equal(parseGoFlagInt("0b101"), 5);
    assert.equal(parseGoFlagInt("0x_1f"), 31);
    assert.equal(parseGoFlagInt("08"), "syntax");
    assert.equal(parseGoFlagInt("1__0"), "syntax");
    assert.equal(parseGoFlagInt("_10"), "syntax");
    assert.equal(parseGoFlagInt("10_"), "syntax");
    assert.equal(parseGoFlagInt("0x"), "syntax");
    assert.equal(parseGoFlagInt(""), "syntax");
  });
});

describe("leader-election namespace", () => {
  it("the pod's own namespace first, then POD_NAMESPACE", () => {
    assert.equal(leaderElectionNamespace("cocoon-system\n", { POD_NAMESPACE: "other" }), "cocoon-system");
    assert.equal(leaderElectionNamespace(undefined, { POD_NAMESPACE: "other" }), "other");
  });

  it("neither: refused with a message that says what to do", () => {
    assert.throws(
      () => leaderElectionNamespace(undefined, {}),
      (err) =>
        err instanceof ConfigError &&
        err.exitCode === 1 &&
        /leader election namespace/.test(err.message) &&
        /POD_NAMESPACE/.test(err.message) &&
        /--leader-elect=false/.test(err.message),
    );
  });
});
