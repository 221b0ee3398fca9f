// The alerts of config/components/prometheus: Prometheus's own promtool accepts the PrometheusRule's
// groups (`check rules`) and every alert fires, and stays quiet, on the input series of
// alerts.promtool.yaml (`test rules`); every alert is tested there and links a section of
// docs/runbooks.md that exists.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { parse, stringify } from "yaml";
import { githubAnchors } from "../../support/markdown.ts";

const repoRoot = resolve(import.meta.dirname, "../../..");
const RUNBOOKS = "https://github.com/cocoonstack/cocoon-operator-ts/blob/main/docs/runbooks.md#";

interface AlertRule {
  alert: string;
  expr: string;
  annotations: Record<string, string>;
  labels: Record<string, string>;
}

const rule = parse(readFileSync(join(repoRoot, "config/components/prometheus/prometheusrule.yaml"), "utf8"));
const alerts: AlertRule[] = rule.spec.groups.flatMap((g: { rules: AlertRule[] }) => g.rules);
const cases = readFileSync(join(import.meta.dirname, "alerts.promtool.yaml"), "utf8");

function promtool(dir: string, ...args: string[]): string {
  try {
    return execFileSync("promtool", args, { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const { stdout, stderr } = err as { stdout?: string; stderr?: string };
    assert.fail(`promtool ${args.join(" ")} failed:\n${stdout ?? ""}${stderr ?? ""}`);
  }
}

describe("the PrometheusRule's alerts", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "cocoon-alerts-"));
    writeFileSync(join(dir, "rules.yaml"), stringify({ groups: rule.spec.groups }));
    copyFileSync(join(import.meta.dirname, "alerts.promtool.yaml"), join(dir, "alerts.promtool.yaml"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("promtool check rules accepts them", () => {
    assert.match(
      promtool(dir, "check", "rules", "rules.yaml"),
      new RegExp(`SUCCESS: ${alerts.length} rules found`),
    );
  });

  it("promtool test rules: each alert fires on its input series and stays quiet on the others", () => {
    assert.match(promtool(dir, "test", "rules", "alerts.promtool.yaml"), /SUCCESS/);
  });

  it("every alert has a firing case and a quiet case in alerts.promtool.yaml", () => {
    const tested = parse(cases).tests.flatMap(
      (t: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }) => t.alert_rule_test,
    );
    for (const { alert } of alerts) {
      const mine = tested.filter((c: { alertname: string }) => c.alertname === alert);
      assert.ok(
        mine.some((c: { exp_alerts: unknown[] }) => c.exp_alerts.length > 0),
        `${alert} fires somewhere`,
      );
      assert.ok(
        mine.some((c: { exp_alerts: unknown[] }) => c.exp_alerts.length === 0),
        `${alert} is quiet somewhere`,
      );
    }
  });

  it("every alert has a severity, a summary and a runbook_url naming a section of docs/runbooks.md", () => {
    const anchors = githubAnchors(readFileSync(join(repoRoot, "docs/runbooks.md"), "utf8"));
    for (const { alert, labels, annotations } of alerts) {
      assert.match(labels.severity ?? "", /^(critical|warning)$/, `${alert} severity`);
      assert.ok(annotations.summary, `${alert} summary`);
      const url = annotations.runbook_url ?? "";
      assert.ok(url.startsWith(RUNBOOKS), `${alert} runbook_url ${url}`);
      assert.equal(url.slice(RUNBOOKS.length), alert.toLowerCase(), `${alert} links its own section`);
      assert.ok(anchors.has(alert.toLowerCase()), `docs/runbooks.md has a section ${alert}`);
    }
  });
});
