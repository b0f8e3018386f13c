/**
 * How one user message reaches the agent: the stored conversation is restored first (once, for a reopened
 * session), the project rules are fixed, MCP prompts and resources are expanded, attached context is read,
 * a rewind's note goes in front; then the agent starts it, queues it, or refuses it (its queue is full).
 */
import type { Agent, SendResult } from '../../agent/loop';
import type { SessionRepository } from '../../store/sessions';
import type { ToolResult } from '../../tools/tool';
import type { ToolContext } from '../../tools/tool';
import type { Checkpoints } from '../../workspace/checkpoints';
import type { LuaUi } from '../lua-ui';
import type { ChatCompletionContentPart } from 'openai/resources/chat/completions';
import { readImages, type ImagePathPolicy } from '../image-attachments';
import { composeMessage, type ContextItem, type FetchUrl, type PathPolicy } from '../message-context';
import type { ConversationRules } from '../project-rules';
import { EVENTS } from '../protocol';
import { restoreConversation } from '../session-history';
import type { SessionRecorder } from '../session-recorder';
import type { McpAttachment } from './mcp-attachment';
import { queueFullMessage, type MessageMeta } from './message-queue';

/**
 * The conversation the model continues from, read when the first message needs it (parsing every stored
 * tool output of a long session must not delay its transcript). Returns the function that restores it once.
 */
export function restoreOnce(
  resume: boolean | undefined,
  o: { sessions: Pick<SessionRepository, 'contextRows'>; sessionId: string; agent: Pick<Agent, 'loadMessages'>; recorder: Pick<SessionRecorder, 'adopt'> },
): () => void {
  let restore = resume;
  return () => {
    if (!restore) return;
    restore = false;
    const restored = restoreConversation(o.sessions.contextRows(o.sessionId));
    o.agent.loadMessages(restored.map((r) => r.message));
    o.recorder.adopt(restored);
  };
}

export interface DeliveryOptions {
  agent: Pick<Agent, 'send'>;
  ensureRestored(): void;
  rules: Pick<ConversationRules, 'freeze'>;
  mcp: Pick<McpAttachment, 'expand'>;
  /** Asks the user outside a turn (an MCP prompt's arguments). */
  ask: NonNullable<ToolContext['ask']>;
  /** Aborted when the session is disposed. */
  signal: AbortSignal;
  /**
   * A message whose delivery the session's end overtook (the chat left it while its context was read):
   * kept by the session instead of starting a turn in a session nobody sees. Without it, it is started.
   */
  park?(text: string, meta: MessageMeta, content?: ChatCompletionContentPart[]): void;
  readFile(path: string): Promise<ToolResult>;
  /** What the workspace says of an attached path: a selection from a secret file goes only after readFile (which asks), one from outside the workspace not at all. */
  pathPolicy?: PathPolicy;
  /** `/fetch <url>` attachments: the fetch tool, run as the user (its mode, approval and rules). */
  fetchUrl: FetchUrl;
  checkpoints: Pick<Checkpoints, 'takeNotes' | 'addNote'>;
  ui: Pick<LuaUi, 'emit'>;
  maxQueue: number;
  /** Images the user attaches (`#image:path`, a pasted path): read under this workspace's path policy. */
  images?: {
    workspace: ImagePathPolicy;
    /** The model now and its `vision` setting (false: images are not sent). */
    model(): { model: string; vision?: boolean };
  };
}

/** `stopped`: the session was left before the message reached its agent (kept with it, see `park`). */
export type Delivered = { id: number } & (SendResult | { status: 'stopped' });

/** The MessageQueue's `deliver`. */
export function messageDelivery(o: DeliveryOptions): (text: string, context: ContextItem[], nextId: () => number, arrivedAt?: number) => Promise<Delivered> {
  return async (text, context, nextId, arrivedAt) => {
    o.ensureRestored();
    await o.rules.freeze(arrivedAt);
    const id = nextId();
    // `/server:prompt …` and `#mcp:server:uri` (MCP prompts and resources) are expanded first.
    const expanded = await o.mcp.expand(text, o.ask, o.signal);
    const imageItems = context.filter((c) => c.kind === 'image');
    const composed = await composeMessage(expanded?.text ?? text, imageItems.length > 0 ? context.filter((c) => c.kind !== 'image') : context, (p) => o.readFile(p), (url) => o.fetchUrl(url), o.pathPolicy);
    if (expanded) composed.labels.unshift(...expanded.labels);
    let parts: ChatCompletionContentPart[] = [];
    if (imageItems.length > 0 && o.images) {
      const images = await readImages(imageItems, o.images.workspace);
      composed.labels.push(...images.labels);
      const model = o.images.model();
      if (images.parts.length > 0 && model.vision === false) {
        composed.text += `\n\n(The user attached ${images.parts.length === 1 ? 'an image' : `${images.parts.length} images`}; not sent: this model is configured without vision.)`;
        o.ui.emit(EVENTS.error, { kind: 'image_rejected', message: `${model.model} is set up without vision (vision = false): the image was not sent, the text was. Set provider.vision = true (or remove it) for a model that reads images.` });
      } else if (images.parts.length > 0) {
        composed.text += `\n\n${images.notes.join('\n')}`;
        parts = images.parts;
      }
    }
    // After a rewind the model learns which of its edits are gone.
    const note = o.checkpoints.takeNotes();
    const full = note ? `${note}\n\n${composed.text}` : composed.text;
    const meta = { id, display: text, labels: composed.labels } satisfies MessageMeta;
    if (o.signal.aborted && o.park) {
      o.park(full, meta, parts.length > 0 ? [{ type: 'text', text: full }, ...parts] : undefined);
      return { id, status: 'stopped' };
    }
    const r = parts.length > 0 ? o.agent.send(full, meta, [{ type: 'text', text: full }, ...parts]) : o.agent.send(full, meta);
    if (r.status === 'queued') o.ui.emit(EVENTS.queued, { id, text, context: composed.labels, position: r.position });
    if (r.status === 'rejected') {
      if (note) o.checkpoints.addNote(note);
      o.ui.emit(EVENTS.error, { kind: 'queue_full', message: queueFullMessage(o.maxQueue) });
    }
    return { id, ...r };
  };
}
