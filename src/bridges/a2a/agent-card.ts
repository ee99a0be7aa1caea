/**
 * The gateway's A2A agent card (A2A 1.0, served at `/.well-known/agent-card.json`): its name and
 * description from `a2a`, one JSON-RPC interface at `{publicUrl}a2a`, streaming and push notifications on, the security
 * schemes of `auth`, and one skill per command type of the catalogue.
 *
 * The catalogue (command types, schemas, versions, backend ids) is what `GET /commands` shows to
 * callers with `read`, so the public card leaves the skills out unless `a2a.publicSkills`; the
 * authenticated extended card (A2A `GetExtendedAgentCard`, `read`) always carries them.
 */
import { A2A_PROTOCOL_VERSION, AgentCard, type AgentSkill, type SecurityScheme } from '@a2a-js/sdk';
import type { AuthConfig, GatewayConfig } from '../../config/types.ts';
import { oauth2Scopes } from '../../manifest/aggregate.ts';
import { GATEWAY_VERSION } from '../../version.ts';

/** One command type as a skill: what the card needs to know of a catalogue entry. */
export interface SkillSource {
  type: string;
  schema: string;
  version: string;
  description?: string;
  backend: string;
}

/** What the card is built from. */
export interface AgentCardInput {
  a2a: GatewayConfig['a2a'];
  auth: AuthConfig;
  publicUrl: string;
  commands: readonly SkillSource[];
  /** With `auth.type: oauth2`: the token endpoint (configured or discovered), when known. */
  tokenUrl?: string;
}

/** The path of the JSON-RPC endpoint under `publicUrl`. */
export const A2A_ENDPOINT_PATH = 'a2a';

/**
 * The agent card (SDK shape); skills follow the catalogue as it is now. `withSkills` false: the
 * public card without the catalogue (it still announces the extended card).
 */
export function buildAgentCard(input: AgentCardInput, withSkills = true): AgentCard {
  const schemes = securitySchemes(input.auth, input.tokenUrl);
  return {
    name: input.a2a.name,
    description: input.a2a.description,
    version: GATEWAY_VERSION,
    supportedInterfaces: [{ url: `${input.publicUrl}${A2A_ENDPOINT_PATH}`, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION, tenant: '' }],
    capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: true },
    securitySchemes: schemes,
    securityRequirements: Object.keys(schemes).map((name) => ({ schemes: { [name]: { list: [] } } })),
    // Text is taken too: it opens a task waiting for a command (input-required), listing the skills.
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json'],
    skills: withSkills ? input.commands.map(skillOf) : [],
    provider: undefined,
    signatures: [],
  };
}

/** The card as JSON on the wire (the SDK client reads it with `AgentCard.fromJSON`). */
export function agentCardJson(card: AgentCard): unknown {
  return AgentCard.toJSON(card);
}

function skillOf(command: SkillSource): AgentSkill {
  const example = { type: command.type, data: {} };
  return {
    id: command.schema,
    name: command.type,
    description: command.description ?? `Send the ${command.type} command (${command.schema} ${command.version}) to ${command.backend}.`,
    tags: [command.backend, 'command'],
    examples: [`Send a message with one data part: ${JSON.stringify(example)}`],
    inputModes: ['application/json'],
    outputModes: ['application/json'],
    securityRequirements: [],
  };
}

/** The schemes of `auth` (none: no scheme). Each is an alternative: a caller presents one. */
function securitySchemes(auth: AuthConfig, tokenUrl?: string): Record<string, SecurityScheme> {
  if (auth.type === 'oauth2') return oauth2Schemes(auth, tokenUrl);
  if (auth.type === 'bearer') {
    return { bearer: { scheme: { $case: 'httpAuthSecurityScheme', value: { description: 'API key as a bearer token', scheme: 'Bearer', bearerFormat: '' } } } };
  }
  if (auth.type === 'apiKey') {
    return { apiKey: { scheme: { $case: 'apiKeySecurityScheme', value: { description: 'API key', location: 'header', name: auth.header } } } };
  }
  return {};
}

/**
 * `auth.type: oauth2`: the client-credentials flow at the provider's token endpoint with the
 * scopes of the mapping table, OpenID Connect discovery when an issuer is configured, and the API
 * key beside them when keys are configured.
 */
function oauth2Schemes(auth: AuthConfig, tokenUrl = ''): Record<string, SecurityScheme> {
  const scopes = Object.fromEntries(oauth2Scopes(auth).map((scope) => [scope, `gateway scope or role ${scope}`]));
  const flows = { flow: { $case: 'clientCredentials' as const, value: { tokenUrl, refreshUrl: '', scopes } } };
  const schemes: Record<string, SecurityScheme> = {
    oauth2: { scheme: { $case: 'oauth2SecurityScheme', value: { description: 'Bearer token of the identity provider', flows, oauth2MetadataUrl: '' } } },
  };
  const issuer = auth.oauth2?.issuer;
  if (issuer) {
    const openIdConnectUrl = `${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
    schemes.openIdConnect = { scheme: { $case: 'openIdConnectSecurityScheme', value: { description: `OpenID Connect provider ${issuer}`, openIdConnectUrl } } };
  }
  if (auth.keys.length > 0) {
    schemes.apiKey = { scheme: { $case: 'apiKeySecurityScheme', value: { description: 'API key', location: 'header', name: auth.header } } };
  }
  return schemes;
}
