/**
 * :CabooseModel (issue 21): the models of every configured provider, for the picker and completion; the
 * one-request streaming check of each provider.
 *
 * A provider's list is its `/models` endpoint (cached for the host's life, or until `refresh`) plus the
 * models configured for it, with the context window where the configuration, the built-in table of
 * well-known models or the server's entry says it.
 */
import type { HostConfig } from './protocol';
import { configuredModels, configuredProviders, modelLabel, resolveProvider, type ResolvedProvider } from './provider-config';
import { fetchModelList } from './model-list';
import { knownContextWindow, listedContextWindow } from '../agent/context';
import { createModelClient, ProviderError } from '../agent/provider';

export interface ModelEntry {
  provider: string;
  model: string;
  /** `provider/model` (the model alone for the single-table form): what :CabooseModel takes. */
  label: string;
  context_window?: number;
  /** Where it came from: the configuration, the server's list, or both. */
  source: 'config' | 'server' | 'both';
}

export interface ProviderListing {
  provider: string;
  base_url: string;
  ok: boolean;
  error?: string;
}

type Cached = { at: number; entries: { id: string; window?: number }[] } | { at: number; error: string };

export class ModelCatalogue {
  private readonly cache = new Map<string, Cached>();

  constructor(private readonly config: () => HostConfig) {}

  /** Every provider's models; each provider's server list fetched concurrently (cached). */
  async list(refresh = false): Promise<{ models: ModelEntry[]; providers: ProviderListing[] }> {
    const config = this.config();
    const names = [...configuredProviders(config).keys()];
    const results = await Promise.all(names.map((name) => this.forProvider(config, name, refresh)));
    return { models: results.flatMap((r) => r.models), providers: results.map((r) => r.listing) };
  }

  private async forProvider(config: HostConfig, name: string, refresh: boolean): Promise<{ models: ModelEntry[]; listing: ProviderListing }> {
    const p = configuredProviders(config).get(name) ?? {};
    let resolved: ResolvedProvider;
    try {
      resolved = await resolveProvider(config, process.env, { provider: name });
    } catch (err) {
      return { models: [], listing: { provider: name, base_url: p.base_url ?? '', ok: false, error: err instanceof Error ? err.message : String(err) } };
    }
    let cached = refresh ? undefined : this.cache.get(name);
    if (!cached) {
      try {
        const list = await fetchModelList(resolved, 5000);
        cached = list.ok
          ? {
              at: Date.now(),
              entries: list.data
                .map((e) => ({ id: (e as { id?: unknown } | null)?.id, window: listedContextWindow(e) }))
                .filter((e): e is { id: string; window: number | undefined } => typeof e.id === 'string' && e.id !== '')
                .map((e) => ({ id: e.id, ...(e.window ? { window: e.window } : {}) })),
            }
          : { at: Date.now(), error: `GET /models answered ${list.status}` };
      } catch (err) {
        cached = { at: Date.now(), error: err instanceof Error ? err.message : String(err) };
      }
      this.cache.set(name, cached);
    }
    const out = new Map<string, ModelEntry>();
    for (const m of configuredModels(p)) {
      const window = m.options.context_window ?? p.context_window ?? knownContextWindow(m.id);
      out.set(m.id, { provider: name, model: m.id, label: modelLabel(config, { name, model: m.id }), source: 'config', ...(window ? { context_window: window } : {}) });
    }
    if ('entries' in cached) {
      for (const e of cached.entries) {
        const had = out.get(e.id);
        if (had) {
          had.source = 'both';
          if (!had.context_window && e.window) had.context_window = e.window;
          continue;
        }
        const window = e.window ?? knownContextWindow(e.id);
        out.set(e.id, { provider: name, model: e.id, label: modelLabel(config, { name, model: e.id }), source: 'server', ...(window ? { context_window: window } : {}) });
      }
    }
    const listing: ProviderListing = { provider: name, base_url: resolved.baseURL, ok: 'entries' in cached, ...('error' in cached ? { error: cached.error } : {}) };
    return { models: [...out.values()], listing };
  }

  /** `provider/model`, `model` (the current provider's, or the provider that lists it), or `provider` alone. */
  async parse(spec: string, currentProvider: string | undefined): Promise<{ provider: string; model: string }> {
    const config = this.config();
    const providers = configuredProviders(config);
    const slash = spec.indexOf('/');
    if (slash > 0 && providers.has(spec.slice(0, slash))) return { provider: spec.slice(0, slash), model: spec.slice(slash + 1) };
    if (providers.has(spec) && slash < 0) {
      const r = await resolveProvider(config, process.env, { provider: spec });
      return { provider: spec, model: r.model };
    }
    // A bare model (which may itself contain '/', as OpenRouter's do): the provider that lists it.
    const { models } = await this.list(false);
    const owners = models.filter((m) => m.model === spec).map((m) => m.provider);
    const provider = currentProvider && owners.includes(currentProvider) ? currentProvider : (owners[0] ?? currentProvider ?? [...providers.keys()][0]);
    return { provider, model: spec };
  }
}

export interface StreamCheck {
  provider: string;
  model: string;
  ok: boolean;
  /** The model answered the tiny request with a streamed tool call. */
  tool_calls: boolean;
  detail: string;
}

/** One tiny streamed request per provider, asking for a tool call: does it stream tool calls? */
export async function checkStreaming(p: ResolvedProvider, signal?: AbortSignal): Promise<StreamCheck> {
  const client = createModelClient({ ...p, maxRetries: 0, maxTokens: 64 });
  const out: StreamCheck = { provider: p.name ?? '', model: p.model, ok: false, tool_calls: false, detail: '' };
  try {
    for await (const ev of client.stream({
      messages: [
        { role: 'system', content: 'You are a connectivity check. Call the `ping` tool once with {"n": 1}. Do not answer in text.' },
        { role: 'user', content: 'ping' },
      ],
      tools: [{ name: 'ping', description: 'Answers pong.', parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } }],
      signal: signal ?? AbortSignal.timeout(60_000),
    })) {
      if (ev.type !== 'done') continue;
      out.ok = true;
      out.tool_calls = ev.toolCalls.some((c) => c.name === 'ping');
      out.detail = out.tool_calls ? `streamed a tool call (${ev.toolCalls[0].arguments || '{}'})` : `answered without a tool call${ev.text ? `: ${ev.text.slice(0, 80)}` : ''}`;
    }
  } catch (err) {
    out.detail = err instanceof ProviderError || err instanceof Error ? err.message : String(err);
  }
  return out;
}
