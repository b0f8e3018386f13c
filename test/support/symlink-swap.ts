import fs from 'node:fs';
import path from 'node:path';
import type { FileWorkspace } from '../../src/workspace/workspace';

/**
 * At the first commit step of `phase`, moves `<root>/<dir>` away and puts a symlink to `target` (outside
 * the workspace) in its place: a folder swapped between the agent's read and its write. `swapped()`
 * says whether it happened; `clear()` removes the hook.
 */
export function swapFolderForLinkAt(ws: FileWorkspace, phase: 'prepare' | 'commit', dir: string, target: string): { swapped(): boolean; clear(): void } {
  let swapped = false;
  ws.files.faultHook = (step) => {
    if (swapped || step.phase !== phase) return;
    swapped = true;
    fs.renameSync(path.join(ws.root, dir), path.join(ws.root, `${dir}-moved`));
    fs.symlinkSync(target, path.join(ws.root, dir));
  };
  return { swapped: () => swapped, clear: () => (ws.files.faultHook = undefined) };
}
