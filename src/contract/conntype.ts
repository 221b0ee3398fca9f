// How a client connects to a VM: the connection type each agent's status entry reports.

/** A non-empty override wins; else a VNC port means vnc; android → adb; windows → rdp; else ssh. */
export function connectionType(os: string, hasVNCPort: boolean, override: string | undefined): string {
  if (override) return override;
  if (hasVNCPort) return "vnc";
  if (os === "android") return "adb";
  if (os === "windows") return "rdp";
  return "ssh";
}
