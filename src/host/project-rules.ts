/**
 * The project rules of one conversation: read when the conversation is created (the chat's first lines say
 * which files), read again when its first message is sent (edits made meanwhile still count), then fixed:
 * the system prompt stays the same for the whole conversation, and a reopened conversation keeps the rules
 * it started with (stored as a session row). Changes to the files apply from the next conversation.
 */
import { z } from 'zod';
import { projectRulesSection } from '../agent/prompt';
import {
  DEFAULT_RULES_FILES,
  DEFAULT_RULES_MAX_BYTES_PER_FILE,
  DEFAULT_RULES_MAX_TOTAL_BYTES,
  loadRules,
  type RulesOptions,
  type RulesSnapshot,
} from '../workspace/rules';
import type { HostConfig } from './protocol';
import { EVENTS } from './protocol-names';
import type { LuaUi } from './lua-ui';
import type { Logger } from './logger';

import { rulesChatLines } from './project-rules-lines';
export { rulesOptions, rulesChatLines } from './project-rules-lines';

/** The snapshot as stored with the session (the texts the prompt was built from), read back with this. */
const StoredRulesSchema = z.object({
  cwd: z.string(),
  root: z.string().nullable(),
  dirs: z.array(z.string()),
  files: z.array(
    z.object({
      path: z.string(),
      rel: z.string(),
      size: z.number(),
      bytes: z.number(),
      text: z.string(),
      truncated: z.enum(['max_bytes_per_file', 'max_total_bytes']).optional(),
      meta: z.object({ description: z.string().optional(), globs: z.string().optional(), alwaysApply: z.boolean().optional() }).optional(),
    }),
  ),
  skipped: z.array(z.object({ path: z.string(), rel: z.string(), size: z.number().optional(), reason: z.string(), overTotal: z.literal(true).optional() })),
});

export interface ConversationRulesOptions {
  /** null: rules are off. */
  options: RulesOptions | null;
  cwd: string;
  ui: LuaUi;
  log: Logger;
  /** A reopened session's stored snapshot (its `rules` row), if it has one. */
  stored?: unknown;
  /** Keeps the snapshot with the session (a reopened conversation uses it again). */
  record?: (snapshot: RulesSnapshot, lines: string[]) => void;
  /** Reads the files (tests inject one). Default: loadRules. */
  load?: (cwd: string, opts: RulesOptions) => Promise<RulesSnapshot>;
}

export class ConversationRules {
  private fixed: RulesSnapshot | null = null;
  private section: string | undefined;
  private preview: Promise<void> = Promise.resolve();
  /** The start() reading: when it began (performance.now()) and what it found. */
  private previewStartedAt = -Infinity;
  private previewSnap: RulesSnapshot | null = null;
  /** What the chat shows, so a second reading only redraws when something changed. */
  private shown: string[] = [];

  constructor(private readonly o: ConversationRulesOptions) {
    if (!o.options || o.stored === undefined || o.stored === null) return;
    const stored = StoredRulesSchema.safeParse(o.stored);
    if (stored.success) this.fix(stored.data);
    else o.log.warn('stored project rules unreadable (read again): %s', stored.error.message);
  }

  /** The files as a system-prompt section; undefined before the first message and when there are none. */
  prompt(): string | undefined {
    return this.section;
  }

  /** The snapshot in force (after the first message, or a reopened session's). */
  get snapshot(): RulesSnapshot | null {
    return this.fixed;
  }

  /** Reads the files and shows which in the chat (not for a reopened session: its transcript shows them). */
  start(): void {
    if (!this.o.options || this.fixed) return;
    this.previewStartedAt = performance.now();
    this.preview = this.read().then((snap) => {
      this.previewSnap = snap;
      if (snap && !this.fixed) this.show(rulesChatLines(snap));
    });
  }

  /**
   * Before the conversation's first message: reads the files again and fixes them for the conversation.
   * `messageAt` (performance.now() when the message arrived): a start() reading that began after it already
   * saw the files as they were when the message was sent, and is used as it is (issue 24: a cold start's
   * first message read them twice in a row, 6–8 ms on its request's path).
   */
  async freeze(messageAt?: number): Promise<void> {
    if (!this.o.options || this.fixed) return;
    await this.preview;
    if (this.fixed) return;
    const fresh = messageAt !== undefined && this.previewSnap !== null && this.previewStartedAt >= messageAt ? this.previewSnap : null;
    const snap = fresh ?? (await this.read()) ?? { cwd: this.o.cwd, root: null, dirs: [], files: [], skipped: [] };
    const lines = rulesChatLines(snap);
    // Files removed since the chat named them: say so rather than leave the old names up.
    this.show(lines.length === 0 && this.shown.length > 0 ? ['Rules: none found'] : lines);
    this.fix(snap);
    this.o.record?.(snap, this.shown);
    this.o.log.info('project rules: %d file(s) (%s), %d skipped', snap.files.length, snap.files.map((f) => f.rel).join(', '), snap.skipped.length);
  }

  private fix(snap: RulesSnapshot): void {
    this.fixed = snap;
    this.section = projectRulesSection(snap);
  }

  private async read(): Promise<RulesSnapshot | null> {
    const opts = this.o.options;
    if (!opts) return null;
    try {
      return await (this.o.load ?? loadRules)(this.o.cwd, opts);
    } catch (e) {
      this.o.log.warn('project rules not read: %s', e instanceof Error ? (e.stack ?? e.message) : String(e));
      return null;
    }
  }

  private show(lines: string[]): void {
    if (lines.join('\n') === this.shown.join('\n')) return;
    this.shown = lines;
    this.o.ui.emit(EVENTS.rules, { lines });
  }
}
