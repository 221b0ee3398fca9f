// vk-cocoon's RunInContainer (provider/cocoon/access.go): the pod's live VM runs the command. A pod
// with no live VM is an error; a Windows guest answers, on stdout and successfully, that exec is not
// supported (guest/rdp/rdp.go); a Linux guest runs it over SSH (guest/ssh/ssh.go), whose errors come
// back wrapped ("ssh exec CMD on IP: …"), a non-zero exit among them ("Process exited with status N").

import type { Clock } from "../../../src/clock.ts";
import type { Faults } from "./faults.ts";
import type { ExecHandler, ExecSession } from "./kubelet.ts";
import type { VmRecord } from "./record.ts";
import type { NodeRuntime } from "./worker.ts";

const SSH_PORT = 22;

/** How vk-cocoon words a guest command's error: the SSH error wrapped with the command and address. */
export function sshExecMessage(command: string, ip: string, detail: string): string {
  return `ssh exec ${command} on ${ip}: ${detail}`;
}

export interface ExecDeps {
  node: NodeRuntime;
  faults: Faults;
  record: VmRecord;
  clock: Clock;
  sshDialTimeoutMs: number;
}

export function runInContainer(deps: ExecDeps): ExecHandler {
  return async (session: ExecSession) => {
    const target = deps.node.execTargets.get(`${session.namespace}/${session.pod}`);
    if (target === undefined) throw new Error(`pod ${session.namespace}/${session.pod} has no live VM`);
    if (target.windows) {
      session.stdout(
        `vk-cocoon: kubectl exec is not supported on Windows guests. Connect via RDP to ${target.ip}.\n`,
      );
      return;
    }
    const address = `${target.ip}:${SSH_PORT}`;
    const first = session.command[0] ?? "";
    const journal = (detail: string) =>
      deps.record.append({
        time: deps.clock.now(),
        kind: "exec",
        vmName: target.vmName,
        namespace: session.namespace,
        podName: session.pod,
        podUID: target.podUID,
        node: deps.node.name,
        vmID: target.vmID,
        detail: `${session.command.join(" ")}: ${detail}`,
      });
    if (deps.faults.guestSilent(target.vmName)) {
      journal("started (guest does not answer SSH)");
      const dialed = await deps.clock.sleep(deps.sshDialTimeoutMs, session.signal).then(
        () => true,
        () => false,
      );
      throw new Error(dialed ? `dial ${address}: i/o timeout` : `dial ${address}: operation was canceled`);
    }
    if (deps.faults.sshHandshakeFails(target.vmName)) {
      journal("ssh handshake failed");
      throw new Error(`ssh handshake ${address}: ssh: handshake failed: EOF`);
    }
    journal("started");
    if (deps.faults.execHangs(target.vmName)) {
      await new Promise<void>((resolve) => {
        if (session.signal.aborted) resolve();
        session.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    }
    const status = session.signal.aborted
      ? 0
      : await target.guest.run(session.command, {
          stdin: session.stdin,
          stdout: session.stdout,
          stderr: session.stderr,
          signal: session.signal,
          clock: deps.clock,
        });
    if (session.signal.aborted) {
      journal("cancelled");
      throw new Error(sshExecMessage(first, target.ip, "context canceled"));
    }
    journal(`exit ${status}`);
    if (status !== 0)
      throw new Error(sshExecMessage(first, target.ip, `Process exited with status ${status}`));
  };
}
