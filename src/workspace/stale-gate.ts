/**
 * The stale-file gate: the sha256s the agent was given for each file this session (reads, write
 * results) and, for an unsaved buffer it read, the disk sha256 seen with it. A change names the sha256
 * it was computed from; the gate refuses it when the file (buffer or disk side) has changed since, and
 * tells a changed file from a made-up sha256.
 */
import { STALE_FILE_ACTION, ToolError } from './errors';
import { notRegularFileError } from './file-errors';
import type { FileView } from './file-view';

const MAX_REMEMBERED = 4096;

export class StaleGate {
  /** `${abs}\0${bufferSha}` → the disk sha256 seen when the agent read that unsaved buffer. */
  private readonly seenDisk = new Map<string, string | null>();
  /** abs → the sha256s the agent was given for it this session (reads, write results): the stale gate tells them from made-up ones. */
  private readonly given = new Map<string, string[]>();

  /** Records that the agent was given `sha` for `abs` (a read, or a write's result). */
  noteGiven(abs: string, sha: string | null | undefined): void {
    if (!sha) return;
    const list = this.given.get(abs) ?? [];
    this.given.delete(abs);
    if (!list.includes(sha)) list.push(sha);
    if (list.length > 64) list.shift();
    this.given.set(abs, list);
    if (this.given.size > MAX_REMEMBERED) this.given.delete(this.given.keys().next().value!);
  }

  private wasGiven(abs: string, sha: string): boolean {
    return this.given.get(abs)?.includes(sha) ?? false;
  }

  /** Records that the agent read (or was given by a write) the unsaved buffer text `bufferSha`, seen with disk `diskSha`. */
  remember(abs: string, bufferSha: string, diskSha: string | null): void {
    this.noteGiven(abs, bufferSha);
    const key = `${abs}\0${bufferSha}`;
    this.seenDisk.delete(key);
    this.seenDisk.set(key, diskSha);
    if (this.seenDisk.size > MAX_REMEMBERED) this.seenDisk.delete(this.seenDisk.keys().next().value!);
  }

  /**
   * The stale gate: `expected` (what the agent last read) must still describe the file on both sides.
   * For an unsaved buffer, its text must hash to `expected` and the disk must be as it was when the
   * agent read that buffer. `""` asserts the path is absent. The message says which side changed.
   */
  assertFresh(view: FileView, expected: string | undefined, rel: string): void {
    // A FIFO, socket or device has no content to compare: say what it is rather than "changed".
    if (view.kind === 'other') throw notRegularFileError(view.abs, rel);
    if (expected === undefined) return;
    if (expected === '') {
      if (view.kind !== 'missing') {
        throw new ToolError('stale_file', `"${rel}" exists, but the expected sha256 "" asserts it does not.`, {
          path: rel,
          suggestedAction: STALE_FILE_ACTION,
        });
      }
      return;
    }
    const exp = expected.toLowerCase();
    const key = `${view.abs}\0${exp}`;
    const seen = this.seenDisk.has(key) ? this.seenDisk.get(key)! : undefined;
    let bufferChanged: boolean;
    let diskChanged: boolean;
    if (view.source === 'buffer') {
      bufferChanged = view.sha256 !== exp;
      // Read as an unsaved buffer: compare the disk with the disk seen then; read from disk: with that read.
      diskChanged = seen !== undefined ? (view.diskSha256 ?? null) !== seen : bufferChanged && view.diskSha256 !== exp;
    } else {
      if (view.sha256 === exp) return;
      if (view.kind === 'missing') {
        throw new ToolError('stale_file', `"${rel}" no longer exists.`, { path: rel, suggestedAction: STALE_FILE_ACTION });
      }
      // The agent read an unsaved buffer that was since saved or discarded, or it read the disk.
      bufferChanged = seen !== undefined;
      diskChanged = seen === undefined || view.sha256 !== seen;
    }
    if (!bufferChanged && !diskChanged) return;
    if (seen === undefined && !this.wasGiven(view.abs, exp)) {
      // Not a sha256 any read or write of this session returned for this file: made up, or taken from elsewhere.
      const read = this.given.has(view.abs);
      throw new ToolError(
        'stale_file',
        `"${rel}": the expected sha256 ${exp.slice(0, 12)}… is not one this file had since the agent read it (${read ? 'no read or write of this file returned it' : 'this file was not read in this session'}); it was not necessarily changed.`,
        {
          path: rel,
          suggestedAction: STALE_FILE_ACTION,
          details: { bufferChanged: false, diskChanged: false, unknownSha256: true },
        },
      );
    }
    const what = bufferChanged && diskChanged
      ? 'both the Neovim buffer (edited by the user) and the file on disk changed'
      : bufferChanged
        ? 'the Neovim buffer changed (the user edited it)'
        : 'the file on disk changed';
    throw new ToolError('stale_file', `"${rel}" changed since you read it: ${what} (sha256 mismatch).`, {
      path: rel,
      suggestedAction: STALE_FILE_ACTION,
      details: { bufferChanged, diskChanged },
    });
  }
}
