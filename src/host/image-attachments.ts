/**
 * Images the user attaches to a message (issue 22): `#image:path`, or a path to a PNG/JPEG file pasted in
 * the message. Each becomes an OpenAI `image_url` content part (a base64 data URL) beside the text.
 *
 * Rules:
 * - PNG and JPEG only, recognised by their bytes (a file named .png that is not one is refused: a renamed
 *   key file never goes out as an "image").
 * - At most MAX_IMAGE_BYTES per image (a clear notice names the limit).
 * - A path in the workspace (relative, or absolute but lexically under the root) gets the file tools' path
 *   policy (PathResolver: confinement with symlinks resolved, deny_globs, every .git) and is refused when
 *   it, or what a symlink of it leads to, matches `secret_globs`; a symlink leading out is outside.
 * - A file outside the workspace goes only when the user typed its absolute (or ~) path, and not when its
 *   real path is in the workspace and refused there, or its name matches `secret_globs`.
 * - The file is opened once and what was opened is checked (the handle's real path, anchored.ts): no
 *   check-then-open race; the bytes are read through that handle.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import type { ContextItem } from './message-context';
import { openVerified, realPathOfFd } from '../workspace/anchored';
import { ToolError } from '../workspace/errors';
import { inGitDir, isUnder, PathResolver, type ResolvedPath } from '../workspace/paths';
import { SecretMatcher } from '../workspace/secrets';

/** The workspace's path policy (a FileWorkspace): the one the file tools use. */
export interface ImagePathPolicy {
  /** Realpath of the workspace root. */
  readonly root: string;
  /** Confines and checks a path (deny_globs, .git); throws a ToolError (outside_workspace, permission_denied…). */
  resolve(p: string): ResolvedPath;
  /** Matches `secret_globs` (workspace-relative, or an outside path without its leading /). */
  isSecret(rel: string): boolean;
  /** Denied by deny_globs or inside a .git (workspace-relative). */
  isDenied(rel: string): boolean;
}

/** The policy of a workspace (FileWorkspace: its deny_globs and secret_globs). */
export function imagePolicy(w: { root: string; resolve(p: string): ResolvedPath; isSecret(rel: string): boolean; paths: { isDenied(rel: string): boolean } }): ImagePathPolicy {
  return { root: w.root, resolve: (p) => w.resolve(p), isSecret: (r) => w.isSecret(r), isDenied: (r) => w.paths.isDenied(r) };
}

/** The policy of a root with these globs (the defaults: the workspace's own defaults). */
export function imagePolicyFor(root: string, denyGlobs?: readonly string[], secretGlobs?: readonly string[]): ImagePathPolicy {
  const paths = new PathResolver(fs.realpathSync.native(root), denyGlobs);
  const secrets = new SecretMatcher(secretGlobs);
  return imagePolicy({ root: paths.root, resolve: (p) => paths.resolve(p), isSecret: (r) => secrets.isSecret(r), paths });
}

/** Largest image sent (bytes of the file; the data URL is a third larger). */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

export interface ImageAttachments {
  /** One image part per image read. */
  parts: ChatCompletionContentPart[];
  /** A line per image for the model's text ("[image shot.png (PNG, 12 KB) attached]"). */
  notes: string[];
  /** The chat's labels ("image shot.png (PNG, 12 KB)", or why it was not attached). */
  labels: string[];
}

export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

/** The image type of `bytes` by their signature, or undefined. */
export function imageType(bytes: Uint8Array): { mime: 'image/png' | 'image/jpeg'; name: 'PNG' | 'JPEG' } | undefined {
  const png = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
  if (bytes.length >= 8 && png.every((b, i) => bytes[i] === b)) return { mime: 'image/png', name: 'PNG' };
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return { mime: 'image/jpeg', name: 'JPEG' };
  return undefined;
}

const IMAGE_EXT = /\.(png|jpe?g)$/i;

type Read = { ok: true; part: ChatCompletionContentPart; note: string; label: string } | { ok: false; label: string };

const { O_RDONLY, O_NONBLOCK } = fs.constants;
const rel = (root: string, abs: string) => path.relative(root, abs).split(path.sep).join('/');
const SECRET = 'matches secret_globs (a file that usually holds secrets is never attached)';
const OUTSIDE = 'outside the workspace (type its absolute path to attach it anyway)';

/** Why the workspace refuses `e` (a ToolError of PathResolver or openVerified). */
function refusal(e: unknown): string {
  if (e instanceof ToolError) {
    if (e.kind === 'outside_workspace') return OUTSIDE;
    if (e.kind === 'permission_denied') return /\.git/.test(e.message) ? 'inside a .git folder (protected)' : 'denied by deny_globs';
    return e.message;
  }
  const code = (e as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return e instanceof Error ? e.message : String(e);
}

/**
 * Opens the image `typed` names under the policy, or says why not. A workspace path is resolved as the
 * file tools resolve it and opened verified (the handle must be exactly at the resolved path); an absolute
 * path outside the workspace is opened as typed and judged by where the handle really is.
 */
async function openImage(typed: string, ws: ImagePathPolicy): Promise<{ fh: fsp.FileHandle } | { why: string }> {
  const root = ws.root;
  const lexical = path.resolve(root, typed);
  if (!path.isAbsolute(typed) || isUnder(root, lexical)) {
    let r: ResolvedPath;
    try {
      r = ws.resolve(typed);
    } catch (e) {
      return { why: refusal(e) };
    }
    // As written and as resolved (a link named shot.png leading to .env): either one a secret is refused.
    if (ws.isSecret(r.rel) || ws.isSecret(rel(root, lexical))) return { why: SECRET };
    try {
      return { fh: await openVerified(root, r.abs, O_RDONLY | O_NONBLOCK) };
    } catch (e) {
      return { why: refusal(e) };
    }
  }
  // Outside the workspace: the user typed this path. What is judged is what was opened.
  if (ws.isSecret(lexical.slice(1))) return { why: SECRET };
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(lexical, O_RDONLY | O_NONBLOCK);
  } catch (e) {
    return { why: refusal(e) };
  }
  const real = (await realPathOfFd(fh.fd)) ?? (await fsp.realpath(lexical).catch(() => null));
  let why: string | null = null;
  if (real === null) why = 'its real path cannot be checked';
  else if (isUnder(root, real)) {
    // A link from outside into the workspace: the workspace's rules for where it leads.
    const r = rel(root, real);
    if (ws.isDenied(r)) why = inGitDir(r) ? 'inside a .git folder (protected)' : 'denied by deny_globs';
    else if (ws.isSecret(r)) why = SECRET;
  } else if (ws.isSecret(real.slice(1))) why = SECRET;
  if (why !== null) {
    await fh.close().catch(() => undefined);
    return { why };
  }
  return { fh };
}

/** Up to `limit` bytes of the open file (one that grew after its stat is not read whole). */
async function readAtMost(fh: fsp.FileHandle, limit: number): Promise<Buffer> {
  const buf = Buffer.alloc(limit);
  let n = 0;
  while (n < limit) {
    const { bytesRead } = await fh.read(buf, n, limit - n, n);
    if (bytesRead === 0) break;
    n += bytesRead;
  }
  return buf.subarray(0, n);
}

async function readOne(item: ContextItem, ws: ImagePathPolicy, maxBytes: number): Promise<Read> {
  const typed = item.path;
  const what = item.name ?? 'image';
  const shown = typed || '?';
  const refuse = (why: string): Read => ({ ok: false, label: `${what} ${shown} — not attached: ${why}` });
  if (!typed) return refuse('no path');
  if (!IMAGE_EXT.test(typed)) return refuse('only .png, .jpg and .jpeg files are attached as images');
  const opened = await openImage(typed, ws);
  if ('why' in opened) return refuse(opened.why);
  const handle = opened.fh;
  try {
    const st = await handle.stat();
    if (!st.isFile()) return refuse('not a file');
    if (st.size > maxBytes) return refuse(`${formatSize(st.size)} is over the ${formatSize(maxBytes)} limit for an image`);
    const bytes = await readAtMost(handle, maxBytes + 1);
    if (bytes.length > maxBytes) return refuse(`${formatSize(bytes.length)} is over the ${formatSize(maxBytes)} limit for an image`);
    const type = imageType(bytes);
    if (!type) return refuse('not a PNG or JPEG file');
    const name = path.basename(typed);
    const size = formatSize(bytes.length);
    return {
      ok: true,
      part: { type: 'image_url', image_url: { url: `data:${type.mime};base64,${bytes.toString('base64')}` } },
      note: `[image ${name} (${type.name}, ${size}) attached]`,
      label: `${what} ${name} (${type.name}, ${size})`,
    };
  } catch (e) {
    return refuse(refusal(e));
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** Reads the image items (others are ignored); the same file attached twice goes once. */
export async function readImages(items: readonly ContextItem[], ws: ImagePathPolicy, maxBytes = MAX_IMAGE_BYTES): Promise<ImageAttachments> {
  const root = ws.root;
  const out: ImageAttachments = { parts: [], notes: [], labels: [] };
  const seen = new Set<string>();
  for (const item of items) {
    if (item.kind !== 'image') continue;
    // The same path twice goes once (a refused one is said once too).
    const key = `${path.isAbsolute(item.path) ? 'abs' : 'rel'} ${path.resolve(root, item.path)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const r = await readOne(item, ws, maxBytes);
    out.labels.push(r.label);
    if (r.ok) {
      out.parts.push(r.part);
      out.notes.push(r.note);
    }
  }
  return out;
}
