/**
 * The tool list of a chat's first model request, as data: what the first-request path (first-request.ts)
 * sends before the tools' modules load. Generated at build time from the tools' own definitions and zod
 * schemas (first-tools-gen.ts, run by scripts/bundle-host.mjs) into the first-request bundle;
 * test/unit/first-tools.test.ts checks that the generated data equals the tools a session builds now.
 */
import type { ModelTool } from '../agent/provider';

export interface FirstTools {
  /** The offered tools in the registry's order, web_search included, bash described without a sandbox. */
  tools: ModelTool[];
  /** bash's description when the model is told commands run in the sandbox. */
  sandboxedBash: string;
}

/** The tools a new chat's first request lists: with web_search when it is configured, bash as the sandbox says. */
export function firstToolsFor(ft: FirstTools, o: { webSearch: boolean; sandboxed: boolean }): ModelTool[] {
  return ft.tools
    .filter((t) => o.webSearch || t.name !== 'web_search')
    .map((t) => (t.name === 'bash' && o.sandboxed ? { name: t.name, description: ft.sandboxedBash, parameters: t.parameters } : t));
}
