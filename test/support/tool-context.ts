/** A ToolContext for unit tests of single tools (no agent, no Neovim). */
import path from 'node:path';
import type { ToolContext } from '../../src/tools/tool';

export function testToolContext(root = '/nonexistent-root', extra: Partial<ToolContext> = {}): ToolContext {
  const dataDir = root === '/nonexistent-root' ? '/nonexistent-data' : path.join(root, '.data');
  return { signal: new AbortController().signal, workspace: { root, dataDir, sessionId: 's1' }, sessionId: 's1', ...extra };
}
