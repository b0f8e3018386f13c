import type { ProviderConfig } from '../agent/provider';
import { DEFAULT_CONTEXT_WINDOW, knownContextWindow, listedContextWindow } from '../agent/context';

/** GET <base_url>/models: the HTTP status and the listed entries (empty when the body has none). */
export async function fetchModelList(provider: ProviderConfig, timeoutMs = 5000): Promise<{ status: number; ok: boolean; data: unknown[] }> {
  const headers: Record<string, string> = { ...(provider.headers ?? {}) };
  if (provider.apiKey) headers.authorization = `Bearer ${provider.apiKey}`;
  const res = await fetch(`${provider.baseURL}/models`, { headers, signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) return { status: res.status, ok: false, data: [] };
  const body = (await res.json().catch(() => null)) as { data?: unknown } | null;
  return { status: res.status, ok: true, data: body && Array.isArray(body.data) ? body.data : [] };
}

export type ContextWindowSource = 'config' | 'known model' | 'server' | 'default';

/**
 * The model's context window: the configured one, else the built-in table of common models, else what
 * the server's model list says about this model, else a conservative default.
 */
export async function resolveContextWindow(
  provider: ProviderConfig,
  list: () => Promise<{ data: unknown[] }> = () => fetchModelList(provider, 3000),
): Promise<{ tokens: number; source: ContextWindowSource }> {
  if (provider.contextWindow) return { tokens: provider.contextWindow, source: 'config' };
  const known = knownContextWindow(provider.model);
  if (known) return { tokens: known, source: 'known model' };
  try {
    const { data } = await list();
    const entry = data.find((e) => (e as { id?: unknown } | null)?.id === provider.model);
    const listed = listedContextWindow(entry);
    if (listed) return { tokens: listed, source: 'server' };
  } catch {
    // an endpoint without a model list: the default below
  }
  return { tokens: DEFAULT_CONTEXT_WINDOW, source: 'default' };
}
