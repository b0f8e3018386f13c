/**
 * The model of the chat's requests as the user chose it (:CabooseModel, :CabooseRetry [model], the picker):
 * the catalogue of the configured providers' models, a model spec resolved, the choice kept for the
 * sessions that follow (:CabooseNew, reopening), and the streaming check of :CabooseModel check.
 */
import type { HostConfig } from './protocol';
import type { SessionRuntime } from './runtime';
import type { ModelCatalogue } from './models';
import type { ResolvedProvider } from './provider-config';

/* eslint-disable @typescript-eslint/no-require-imports */
const providerConfig = () => require('./provider-config') as typeof import('./provider-config');

export interface ResolvedModel {
  resolved: ResolvedProvider;
  label: string;
  provider: string;
}

export class ModelChoice {
  /** The model chosen last: kept for the sessions that follow. */
  private choice: { provider: string; model: string } | null = null;
  private catalogueInstance: ModelCatalogue | null = null;

  constructor(
    private readonly config: () => HostConfig,
    /** Turns a refusal into the user's error (thrown). */
    private readonly userError: (err: unknown) => never,
  ) {}

  catalogue(): ModelCatalogue {
    if (!this.catalogueInstance) {
      const { ModelCatalogue } = require('./models') as typeof import('./models');
      this.catalogueInstance = new ModelCatalogue(this.config);
    }
    return this.catalogueInstance;
  }

  /** The models to pick from, and the one in use (the chat's, else the next session's). */
  async list(runtime: SessionRuntime | null, refresh: boolean) {
    const listed = await this.catalogue().list(refresh);
    const current = runtime?.model() ?? (await this.current());
    return { ...listed, current: { provider: current.name, model: current.model, label: providerConfig().modelLabel(this.config(), current) } };
  }

  /** A model spec as :CabooseModel takes it ('provider/model', a model of the current provider, a provider), resolved. */
  async resolve(rt: SessionRuntime, model: string, provider?: string): Promise<ResolvedModel> {
    const { resolveProvider, modelLabel } = providerConfig();
    const config = this.config();
    const choice = provider ? { provider, model } : await this.catalogue().parse(model, (rt.model() ?? (await this.current())).name);
    try {
      const resolved = await resolveProvider(config, process.env, choice);
      return { resolved, label: modelLabel(config, resolved), provider: resolved.name ?? choice.provider };
    } catch (err) {
      return this.userError(err);
    }
  }

  /** The chat's next requests (and later chats') use this model. */
  apply(rt: SessionRuntime, m: ResolvedModel): void {
    this.choice = { provider: m.provider, model: m.resolved.model };
    rt.setModel(m.resolved, m.label);
  }

  /** The provider and model the next session would use. */
  current(): Promise<ResolvedProvider> {
    return providerConfig().resolveProvider(this.config(), process.env, this.choice ?? {});
  }

  /** The next session's provider; a choice the configuration no longer has (setup() changed it) falls back to the default. */
  forNewSession(): Promise<ResolvedProvider> {
    const { resolveProvider } = providerConfig();
    return resolveProvider(this.config(), process.env, this.choice ?? {}).catch((err: unknown) => {
      if (!this.choice) throw err;
      this.choice = null;
      return resolveProvider(this.config());
    });
  }

  /** :CabooseModel check: each configured provider streams a reply with a tool call (the chat's model for its provider). */
  async check(runtime: SessionRuntime | null) {
    const { configuredProviders, resolveProvider } = providerConfig();
    const { checkStreaming } = require('./models') as typeof import('./models');
    const config = this.config();
    const names = [...configuredProviders(config).keys()];
    const results = await Promise.all(
      names.map(async (name) => {
        const current = runtime?.model();
        const pick = current?.name === name ? { provider: name, model: current.model } : { provider: name };
        try {
          return await checkStreaming(await resolveProvider(config, process.env, pick));
        } catch (err) {
          return { provider: name, model: '', ok: false, tool_calls: false, detail: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
    return { results };
  }
}
