/**
 * Images the user attaches to a message (issue 22): `#image:path`, or a path to a PNG/JPEG file pasted in
 * the message. Each becomes an OpenAI `image_url` content part (a base64 data URL) beside the text.
 *
 * Rules:
 * - PNG and JPEG only, recognised by their bytes (a file named .png that is not one is refused: a renamed
 *   key file never goes out as an "image").
 * - At most MAX_IMAGE_BYTES per image (a clear notice names the limit).
 * - A relative path is resolved in the workspace and must stay inside it (symlinks followed); a file
 *   outside the workspace goes only when the user typed its absolute (or ~) path.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import type { ContextItem } from './message-context';

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

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

type Read = { ok: true; part: ChatCompletionContentPart; note: string; label: string } | { ok: false; label: string };

async function readOne(item: ContextItem, root: string, maxBytes: number): Promise<Read> {
  const typed = item.path;
  const what = item.name ?? 'image';
  const shown = typed || '?';
  const refuse = (why: string): Read => ({ ok: false, label: `${what} ${shown} — not attached: ${why}` });
  if (!typed) return refuse('no path');
  if (!IMAGE_EXT.test(typed)) return refuse('only .png, .jpg and .jpeg files are attached as images');
  const explicit = path.isAbsolute(typed);
  const abs = path.resolve(root, typed);
  let real: string;
  try {
    real = await fs.realpath(abs);
  } catch {
    return refuse('no such file');
  }
  let realRoot = root;
  try {
    realRoot = await fs.realpath(root);
  } catch {
    // the root as given
  }
  if (!explicit && !inside(realRoot, real)) return refuse('outside the workspace (type its absolute path to attach it anyway)');
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(real, 'r');
    const st = await handle.stat();
    if (!st.isFile()) return refuse('not a file');
    if (st.size > maxBytes) return refuse(`${formatSize(st.size)} is over the ${formatSize(maxBytes)} limit for an image`);
    const bytes = await handle.readFile();
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
    return refuse(e instanceof Error ? e.message : String(e));
  } finally {
    await handle?.close();
  }
}

/** Reads the image items (others are ignored); the same file attached twice goes once. */
export async function readImages(items: readonly ContextItem[], root: string, maxBytes = MAX_IMAGE_BYTES): Promise<ImageAttachments> {
  const out: ImageAttachments = { parts: [], notes: [], labels: [] };
  const seen = new Set<string>();
  for (const item of items) {
    if (item.kind !== 'image') continue;
    // The same path twice goes once (a refused one is said once too).
    const key = `${path.isAbsolute(item.path) ? 'abs' : 'rel'} ${path.resolve(root, item.path)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const r = await readOne(item, root, maxBytes);
    out.labels.push(r.label);
    if (r.ok) {
      out.parts.push(r.part);
      out.notes.push(r.note);
    }
  }
  return out;
}
