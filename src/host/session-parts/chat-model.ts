/** The model of one chat: swapped by :CabooseModel, so the next request (of the chat, its subagents, titles, selection edits) goes to the new one. */
import { createModelClient, OpenAIProvider, type Exchange, type ModelClient, type ModelEvent, type ModelRequest } from '../../agent/provider';
import { configuredProviders, type ResolvedProvider } from '../provider-config';
import type { HostConfig } from '../protocol';

/** The model client of a chat: the next request goes to the model set last. */
export class SwitchableModel implements ModelClient {
  /** The chat's last HTTP request to the model (its agent's or a subagent's): :CabooseDebug. */
  lastExchange: Exchange | undefined;
  constructor(private current: ModelClient) {}
  get model(): string {
    return this.current.model;
  }
  set(client: ModelClient): void {
    this.current = client;
  }
  stream(req: ModelRequest): AsyncIterable<ModelEvent> {
    const outer = req.observe;
    return this.current.stream({
      ...req,
      observe: (ex) => {
        this.lastExchange = ex;
        outer?.(ex);
      },
    });
  }
  prepare(): Promise<void> {
    return this.current.prepare?.() ?? Promise.resolve();
  }
}

/**
 * Keys the bash tool keeps out of commands' environment: the current provider's, and every configured
 * provider's literal or environment key (a key from api_key_cmd joins once that provider is chosen).
 */
export function providerSecrets(config: HostConfig, provider: ResolvedProvider, env: NodeJS.ProcessEnv = process.env): string[] {
  const secrets: string[] = [provider.apiKey];
  for (const p of configuredProviders(config).values()) {
    if (p.api_key) secrets.push(p.api_key);
    if (p.api_key_env && env[p.api_key_env]) secrets.push(env[p.api_key_env] as string);
  }
  return secrets;
}

export class ChatModel {
  readonly client: SwitchableModel;
  /** Every provider's key seen so far (the bash tool holds this very list). */
  readonly secrets: string[];

  constructor(
    config: HostConfig,
    private current: ResolvedProvider,
    /** What the winbar calls the model (`provider/model` with named providers). */
    public label: string,
    /** The first client, wrapped (the first-request path's reply taken over: src/agent/prefetched.ts). */
    wrapFirst?: (client: OpenAIProvider) => ModelClient,
  ) {
    this.secrets = providerSecrets(config, current);
    this.client = new SwitchableModel(wrapFirst ? wrapFirst(new OpenAIProvider(current)) : createModelClient(current));
  }

  get provider(): ResolvedProvider {
    return this.current;
  }

  /** A client of its own for the current model (titles, selection edits). */
  fresh(): ModelClient {
    return createModelClient(this.current);
  }

  set(p: ResolvedProvider, label: string): void {
    this.current = p;
    this.label = label;
    if (p.apiKey && !this.secrets.includes(p.apiKey)) this.secrets.push(p.apiKey);
    this.client.set(createModelClient(p));
  }
}
