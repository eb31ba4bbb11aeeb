// The host OS as Node names it (`process.platform`: "win32", "linux"...), or "browser": what the
// environment rules (protocol/env.ts, protocol/policy.ts) ask to know whether variable names
// ignore case and which host variables an agent gets. Set once by AcpContext from its Platform
// (the unit tests set Node's: test/unit/setup-node-platform.ts).

let current: string | undefined;

export function useHostOs(os: string): void {
  current = os;
}

export function hostOs(): string {
  if (current === undefined) throw new Error("hostOs() before the platform was chosen (AcpContext sets it)");
  return current;
}
