/**
 * The first-request path (issue 24): a cold `send('hi')` — the host just started, the first message came
 * with host.init — sends the model request before the session's store, workspace and tools load, and shows
 * the reply's first text while they do. Run from the small first-request bundle (first-main.ts); the rest
 * of the host then loads and takes the request's reply over (HostServer.adoptFirst, agent/prefetched.ts):
 * the session records the message, runs the agent loop on that reply (tool calls, approvals, stop,
 * recording, titles as always), and does not show again what this path showed.
 *
 * It only handles the simple, common case, where the request depends on nothing the session's modules
 * would have to compute: a new chat (no history), the built-in agent, a message without attached context,
 * no MCP servers, a provider key that needs no command, and a sandbox answer an earlier host remembered
 * (or the sandbox off). Anything else: `prepareFirst` returns null and the message takes the usual path.
 * The request is built from the same inputs as the session's (config, system prompt, project rules, the
 * tools' generated schemas: first-tools.ts), and the session takes the reply over only when the body it
 * would send is byte for byte the one sent.
 */
import { defaultSystemPrompt, projectRulesSection } from '../agent/prompt';
import { failureOf, type PrefetchedReply, type PrefetchItem } from '../agent/prefetched';
import { OpenAIProvider, type ChatMessage, type Exchange, type ModelEvent } from '../agent/provider';
import { loadRules, syncRulesIo, type RulesSnapshot } from '../workspace/rules';
import { rememberedTrial } from '../workspace/sandbox/sandbox';
import { firstToolsFor, type FirstTools } from './first-tools';
import { preconnectSettled } from '../agent/preconnect';
import type { Logger } from './logger';
import type { ShownEvent } from './lua-ui';
import type { HostConfig } from './protocol';
import { EVENTS } from './protocol-names';
import { modelLabel, resolveProvider } from './provider-config';
import { configBlocker } from './first-eligibility';
import { rulesChatLines, rulesOptions } from './project-rules-lines';

/** Longer messages take the usual path (the context window's checks are the session's). */
export const FIRST_MAX_CHARS = 32_000;

export interface FirstInit {
  config: HostConfig;
  cwd: string;
  dataDir: string;
}

/** Why the usual path is taken instead (null: the first-request path applies). */
export function firstBlocker(init: FirstInit, send: { text: string; context?: unknown[] | null }): string | null {
  const { config } = init;
  if ((send.context?.length ?? 0) > 0) return 'context attached';
  if (send.text.length > FIRST_MAX_CHARS) return 'long message';
  const never = configBlocker(config);
  if (never) return never;
  // bash's description says whether commands run in the sandbox: known without the trial only when an
  // earlier host remembered its answer (the usual path then waits for the trial).
  if ((config.sandbox?.mode ?? 'workspace-write') !== 'off' && rememberedTrial(init.dataDir) === null) return 'no remembered sandbox trial';
  return null;
}

/** The request, the events shown for it, and its reply as it arrives (a PrefetchedReply for the session). */
export class FirstRequest implements PrefetchedReply {
  private id: string | undefined;
  /** Made once the request is on its way (node:crypto is not loaded before it: issue 24). */
  get sessionId(): string {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return (this.id ??= (require('node:crypto') as typeof import('node:crypto')).randomUUID());
  }
  readonly shown: ShownEvent[] = [];
  exchange: Exchange | undefined;
  bodyJson = '';
  rules: RulesSnapshot | null = null;
  private readonly items: PrefetchItem[] = [];
  private waiters: (() => void)[] = [];
  private readonly controller = new AbortController();
  /** Text is shown as it arrives until the session takes over, or an event other than text arrives. */
  private relaying = true;
  /** Settles at the reply's first item (or its end). */
  readonly firstItem: Promise<void>;
  private onFirst!: () => void;

  constructor(
    private readonly emit: (name: string, payload: Record<string, unknown>) => void,
    private readonly log: Logger,
  ) {
    this.firstItem = new Promise((resolve) => (this.onFirst = resolve));
  }

  item(i: number): Promise<PrefetchItem> {
    if (i < this.items.length) return Promise.resolve(this.items[i]);
    return new Promise<void>((resolve) => this.waiters.push(resolve)).then(() => this.item(i));
  }

  abort(): void {
    this.controller.abort();
  }

  /** The session takes over: nothing more is shown from here; returns what was shown. */
  handOver(): ShownEvent[] {
    this.relaying = false;
    return this.shown.slice();
  }

  /** Shows the event and remembers it (the session drops its own copy of it). */
  show(name: string, payload: Record<string, unknown>): void {
    this.shown.push({ name, payload });
    this.emit(name, payload);
  }

  /**
   * Builds and sends the request, showing what the session would show first: the session, the rules, the
   * message, the streaming state, the reply's start. Resolves once the request is on its way.
   */
  async start(init: FirstInit, text: string): Promise<void> {
    const { config, cwd, dataDir } = init;
    const provider = await resolveProvider(config);
    const label = modelLabel(config, provider);
    const client = new OpenAIProvider(provider);
    // The project rules, read after the message arrived: what the session's reading would find. Their
    // reads wait on the disk; meanwhile the SDK and the HTTP module load (the CPU is free then).
    const ro = rulesOptions(config);
    const reading = ro ? loadRules(cwd, ro, syncRulesIo) : Promise.resolve(null);
    reading.catch(() => undefined);
    await client.prepare();
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    require(provider.baseURL.startsWith('https:') ? 'node:https' : 'node:http');
    const snap = await reading;
    this.rules = snap;
    const mode = config.mode ?? 'create';
    const base = config.system_prompt ?? defaultSystemPrompt(mode, cwd);
    const section = snap ? projectRulesSection(snap) : undefined;
    const system = section ? `${base}\n\n${section}` : base;
    const sandboxed = (config.sandbox?.mode ?? 'workspace-write') === 'off' ? false : (rememberedTrial(dataDir)?.available ?? null);
    if (sandboxed === null) throw new FirstNotApplicable('no remembered sandbox trial (removed meanwhile)');
    const tools = firstToolsFor(firstToolsData(), { webSearch: Boolean(config.web_search?.searxng_url), sandboxed });
    const messages: ChatMessage[] = [
      { role: 'system', content: system },
      { role: 'user', content: text },
    ];
    this.bodyJson = JSON.stringify(client.requestBody({ messages, tools }));
    // The request leaves first: asking for the reply's first event sends it (the SDK builds it and hands it
    // to node:http in this turn's promise work); what the session shows first is shown once that is done,
    // before anything of the reply is relayed (pump waits for it).
    // The connection opened at host.init (agent/preconnect.ts) seen connected first: the request then
    // leaves as soon as it is made, not once this busy turn of the event loop ends.
    await preconnectSettled();
    const reply = client.stream({ messages, tools, signal: this.controller.signal, observe: (ex) => (this.exchange = ex) })[Symbol.asyncIterator]();
    const first = reply.next();
    first.catch(() => undefined); // seen by pump
    await new Promise<void>((resolve) => setImmediate(resolve));
    // What the session shows first, in its order (session-identity.ts, project-rules.ts, agent-events.ts).
    this.show(EVENTS.sessionInfo, { session: this.sessionId, model: label, cwd, title: null });
    const lines = snap ? rulesChatLines(snap) : [];
    if (lines.length > 0) this.show(EVENTS.rules, { lines });
    this.show(EVENTS.userMessage, { id: 1, text, context: [] });
    this.show(EVENTS.state, { state: 'streaming', previous: 'idle', mode, session: this.sessionId, grants: [] });
    this.show(EVENTS.assistantStart, {});
    void this.pump(reply, first);
  }

  private async pump(events: AsyncIterator<ModelEvent>, first: Promise<IteratorResult<ModelEvent>>): Promise<void> {
    try {
      for (let r = await first; !r.done; r = await events.next()) {
        const ev = r.value;
        this.push({ event: ev });
        if (!this.relaying) continue;
        if (ev.type === 'text') this.show(EVENTS.assistantDelta, { text: ev.delta });
        else if (ev.type === 'reasoning') this.show(EVENTS.reasoningDelta, { text: ev.delta });
        // The session shows nothing for these; anything else it shows itself, after taking over.
        else if (ev.type !== 'tool_call_delta') this.relaying = false;
      }
      this.push({ end: true });
    } catch (err) {
      this.relaying = false;
      this.log.info('first request: %s', err instanceof Error ? err.message : String(err));
      this.push({ error: failureOf(err) });
    }
  }

  private push(item: PrefetchItem): void {
    this.items.push(item);
    if (this.items.length === 1) this.onFirst();
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

export class FirstNotApplicable extends Error {}

/** Set by the first-request bundle (scripts/bundle-host.mjs: the generated tool list). */
declare const __CABOOSE_FIRST_TOOLS__: string | undefined;
let toolsData: FirstTools | undefined;
function firstToolsData(): FirstTools {
  if (typeof __CABOOSE_FIRST_TOOLS__ === 'undefined') throw new FirstNotApplicable('no generated tool list (not the first-request bundle)');
  return (toolsData ??= JSON.parse(__CABOOSE_FIRST_TOOLS__) as FirstTools);
}
