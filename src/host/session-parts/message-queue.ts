/**
 * The user's messages on their way to the agent: one after another (a message whose context takes a moment
 * to read keeps its place), each numbered, and what the chat shows of each (its words and context labels)
 * carried through the agent's own queue as the message's metadata.
 */
import type { ContextItem } from '../message-context';

/** What the chat shows of a message, carried through the agent's queue. */
export interface MessageMeta {
  id: number;
  display: string;
  labels: string[];
}

/** The chat's view of a queued or started message (a message without metadata shows its text). */
export function metaOf(m: { text: string; meta?: unknown }): MessageMeta {
  return (m.meta as MessageMeta | undefined) ?? { id: 0, display: m.text, labels: [] };
}

/** What the chat says when the agent's queue is full. */
export function queueFullMessage(maxQueue: number): string {
  return `The agent is busy and ${maxQueue} message${maxQueue === 1 ? ' is' : 's are'} already queued; wait or :CabooseStop.`;
}

export class MessageQueue<R> {
  private count = 0;
  private sending: Promise<unknown> = Promise.resolve();

  /**
   * `deliver` hands one message to the agent; it runs once every earlier message was delivered, and takes
   * the message's number with `nextId()` when it gets that far.
   */
  constructor(private readonly deliver: (text: string, context: ContextItem[], nextId: () => number, arrivedAt: number) => Promise<R>) {}

  /** `arrivedAt`: when the host received the message (performance.now(); default now). */
  send(text: string, context: ContextItem[], arrivedAt = performance.now()): Promise<R> {
    const next = this.sending.then(() => this.deliver(text, context, () => ++this.count, arrivedAt));
    this.sending = next.catch(() => undefined);
    return next;
  }

  /** A number for a message that reaches the agent another way (a regenerated one). */
  takeId(): number {
    return ++this.count;
  }

  /** Resolves once every message sent so far reached the agent (started or queued). */
  sent(): Promise<unknown> {
    return this.sending;
  }
}
