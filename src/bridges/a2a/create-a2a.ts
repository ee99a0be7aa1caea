/**
 * The A2A feature (`a2a.enabled`, default on): the agent, its task store and push notifications
 * (posted through the egress delivery client handed in as `post`), joined to `life` (the store
 * closes after the executor).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { CommandCatalogue } from '../../catalogue/command-catalogue.ts';
import type { CommandIngestion } from '../../commands/ingestion.ts';
import type { GatewayConfig } from '../../config/types.ts';
import type { AccessRules } from '../../edge/access-rules.ts';
import type { Admission } from '../../edge/admission.ts';
import type { Lifecycle } from '../../lifecycle.ts';
import { a2aMetrics } from '../../metrics/a2a.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { a2aBridge, a2aLimits, type A2aBridge, type A2aBridgeOptions } from './a2a-bridge.ts';
import { openTaskStore } from './open-task-store.ts';

/** What A2A needs. */
export interface A2aDeps {
  config: GatewayConfig;
  publicUrl: string;
  catalogue: CommandCatalogue;
  ingestion: CommandIngestion;
  aliases: AliasSource;
  tail: LiveTail;
  /** Posts a push notification through the SSRF-guarded delivery client. */
  post: A2aBridgeOptions['post'];
  /** The one admission path: method scopes and the stream pool. */
  admission: Admission;
  /** Per-caller catalogues: the skills each caller is shown and may use. */
  access: AccessRules;
  /** With `auth.type: oauth2`: the token endpoint the card's security schemes name, once known. */
  tokenUrl?: () => string | undefined;
  /** The configured backends of the current configuration generation (a reload changes them). */
  backendConfigs?: A2aBridgeOptions['backendConfigs'];
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The A2A bridge with its task store, or undefined when `a2a.enabled` is false. */
export async function createA2a(deps: A2aDeps): Promise<ReloadableA2a | undefined> {
  const { config, life } = deps;
  if (!config.a2a.enabled) return undefined;
  const { a2a } = config;
  // Read at each use by the store, the quota check and the push sender: a reload changes them in place (`reconfigure`).
  const limits = a2aLimits(a2a);
  const taskStore = await openTaskStore(config.storage, limits);
  life.add({ close: () => taskStore.close() });
  const bridge = a2aBridge({
    config, publicUrl: deps.publicUrl, catalogue: deps.catalogue, ingestion: deps.ingestion, aliases: deps.aliases, tail: deps.tail,
    taskStore, limits, metrics: a2aMetrics(deps.registry), admission: deps.admission, access: deps.access, tokenUrl: deps.tokenUrl, backendConfigs: deps.backendConfigs, logger: deps.logger.child({ component: 'a2a' }), post: deps.post,
  });
  life.add(bridge.executor);
  life.add(bridge.pushSender);
  return {
    ...bridge,
    reconfigure: (next) => {
      Object.assign(limits, a2aLimits(next));
    },
  };
}

/** The A2A bridge as the wiring holds it: `reconfigure` takes a reload's task and push bounds (stored tasks stay until trimmed). */
export interface ReloadableA2a extends A2aBridge {
  reconfigure(next: GatewayConfig['a2a']): void;
}
