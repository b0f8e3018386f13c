/** The sandbox's modes: shared by the config's schema (config.ts, zod) and the policy (policy.ts, no zod). */
export const SANDBOX_MODES = ['workspace-write', 'read-only', 'off'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];
