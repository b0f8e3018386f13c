/**
 * Permission modes: which tool policies run, ask or are blocked. Pure; the loop asks this and nothing else.
 *
 * | mode      | read | interactive | edit  | exec  |
 * |-----------|------|-------------|-------|-------|
 * | plan      | run  | run         | block | block |
 * | create    | run  | run         | ask   | ask   |
 * | auto-edit | run  | run         | run   | ask   |
 * | chug      | run  | run         | run   | run   |
 *
 * An exec call that says where it runs (bash: `confinement`) combines with the OS sandbox like Codex:
 *
 * | mode      | sandboxed | escalated | unsandboxed (sandbox.mode off) | unavailable (no sandbox) |
 * |-----------|-----------|-----------|--------------------------------|--------------------------|
 * | plan      | block     | block     | block                          | block                    |
 * | create    | ask       | ask       | ask                            | ask                      |
 * | auto-edit | run       | ask       | ask                            | ask                      |
 * | chug      | run       | ask       | run                            | ask                      |
 *
 * Escalations ask every time: an earlier "always" does not cover them.
 */
import type { ToolPolicy } from '../tools/tool';
import type { Confinement } from '../workspace/sandbox/sandbox';

export const PERMISSION_MODES = ['plan', 'create', 'auto-edit', 'chug'] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];
export const DEFAULT_MODE: PermissionMode = 'create';

export type Permission = 'run' | 'ask' | 'block';

export function isPermissionMode(v: unknown): v is PermissionMode {
  return typeof v === 'string' && (PERMISSION_MODES as readonly string[]).includes(v);
}

/**
 * `allowed`: the user's configuration lets the tool run without asking (an MCP server's `allow`). It then
 * runs in every mode but plan, where it runs only when it is also read-only (the server's readOnlyHint):
 * plan mode's promise — nothing changes — holds even for tools the user trusts.
 */
export function permissionFor(mode: PermissionMode, policy: ToolPolicy, allowed?: { readOnly: boolean }, confinement?: Confinement): Permission {
  if (policy === 'read' || policy === 'interactive') return 'run';
  if (allowed) return mode === 'plan' && !allowed.readOnly ? 'block' : 'run';
  if (policy === 'exec' && confinement !== undefined) {
    if (mode === 'plan') return 'block';
    if (mode === 'create' || confinement === 'escalated' || confinement === 'unavailable') return 'ask';
    if (confinement === 'sandboxed') return 'run';
    return mode === 'chug' ? 'run' : 'ask';
  }
  switch (mode) {
    case 'plan':
      return 'block';
    case 'create':
      return 'ask';
    case 'auto-edit':
      return policy === 'edit' ? 'run' : 'ask';
    case 'chug':
      return 'run';
  }
}

/** What the model reads when a call is blocked by plan mode. */
export function blockedByModeMessage(tool: string, policy: ToolPolicy): string {
  return (
    `The ${tool} tool (${policy}) is blocked: the session is in plan mode, where only read-only tools run. ` +
    'Do not retry it. Investigate with read-only tools and describe the changes you propose; the user can switch to another mode to apply them.'
  );
}
