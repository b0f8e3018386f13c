/** `sandbox` in the host configuration: its schema (zod), apart from policy.ts (see there). */
import { z } from 'zod';
import { SANDBOX_MODES } from './modes';

/** `sandbox` in the host configuration (setup() sends it as is). */
export const SandboxConfigSchema = z
  .object({
    /** Absent: workspace-write where a sandbox is available. */
    mode: z.enum(SANDBOX_MODES).nullable(),
    network: z
      .object({
        /** true: every host; a list: these hosts (exact names, or `*.example.com` for its subdomains). */
        allow: z.union([z.boolean(), z.array(z.string().min(1).max(253))]),
      })
      .partial(),
    /** More paths the command may not read (`~` is the home folder). */
    deny_read: z.array(z.string().min(1)),
    /** More paths the command may write (e.g. `/tmp` to share the user's temp folder). */
    writable: z.array(z.string().min(1)),
  })
  .partial();
export type SandboxConfig = z.infer<typeof SandboxConfigSchema>;
