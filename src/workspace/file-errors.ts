/**
 * The refusals of file access (reads, the stale gate, commits), as tool errors whose message says what
 * is wrong with the file and what to do about it.
 */
import fs from 'node:fs';
import { STALE_FILE_ACTION, ToolError } from './errors';

export function unsavedBufferError(rel: string, what: string): ToolError {
  return new ToolError('unsaved_buffer', `"${rel}" has unsaved changes in a Neovim buffer; ${what}.`, {
    path: rel,
    suggestedAction: `Ask the user to save or discard their changes to ${rel} first.`,
  });
}

export function isPermissionError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === 'EACCES' || code === 'EPERM';
}

export function unreadableError(rel: string): ToolError {
  return new ToolError('permission_denied', `"${rel}" cannot be read: permission denied.`, {
    path: rel,
    suggestedAction: `Leave it alone, or ask the user to make it readable (chmod u+r ${rel}).`,
  });
}

/** A path that is a FIFO, socket or device: never opened (a FIFO would block), refused by every file tool. */
export function notRegularFileError(abs: string, rel: string): ToolError {
  let what = 'not a regular file';
  try {
    const st = fs.statSync(abs);
    if (st.isFIFO()) what = 'a FIFO (named pipe), not a regular file';
    else if (st.isSocket()) what = 'a socket, not a regular file';
    else if (st.isCharacterDevice() || st.isBlockDevice()) what = 'a device, not a regular file';
  } catch {
    // gone meanwhile: the generic words
  }
  return new ToolError('permission_denied', `"${rel}" is ${what}; the file tools only read and change regular files.`, {
    path: rel,
    suggestedAction: 'Leave it alone; use bash if it really must be read or written.',
  });
}

export function readonlyError(rel: string, why: string): ToolError {
  return new ToolError('permission_denied', `"${rel}" is read-only (${why}); read-only files are not changed.`, {
    path: rel,
    suggestedAction: `Leave it unchanged, or ask the user to make it writable (chmod u+w ${rel}) or to set allow_readonly_writes = true.`,
  });
}

export function bufferChangedError(rel: string): ToolError {
  return new ToolError('stale_file', `"${rel}" changed since you read it: the Neovim buffer changed (the user edited, saved or discarded it).`, {
    path: rel,
    suggestedAction: STALE_FILE_ACTION,
    details: { bufferChanged: true, diskChanged: false },
  });
}

export function hardLinkError(rel: string, links: number): ToolError {
  return new ToolError(
    'permission_denied',
    `"${rel}" has ${links} hard links; replacing it would split them (the other names would keep the old text), so it is not changed.`,
    {
      path: rel,
      suggestedAction: `Leave it unchanged, or ask the user to set hard_links = "in_place" (the file is then written in place, keeping every link).`,
      details: { hardLinks: links },
    },
  );
}

export function concurrentWriteError(rel: string): ToolError {
  return new ToolError(
    'stale_file',
    `"${rel}" changed since you read it: another program wrote to the file on disk while this change was being committed. Nothing was changed; its version was kept.`,
    { path: rel, suggestedAction: STALE_FILE_ACTION, details: { bufferChanged: false, diskChanged: true, concurrentWrite: true } },
  );
}
